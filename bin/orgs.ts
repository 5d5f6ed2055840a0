// Organizations of the patient API, their API keys and the FHIR source catalog, from the command line.
//   bun run orgs create <name>                      list
//   bun run orgs key-create <org_id> [label] [--version YYYY-MM-DD]   (the key is shown once)
//   bun run orgs keys <org_id>                      key-revoke <org_id> <key_id>
//   bun run orgs source-add <name> <fhir_base_url> [--type t] [--logo-url u] [--portal-url u]
//                          [--client-id id] [--client-secret s] [--scopes "launch/patient patient/*.read"]
//   bun run orgs source-update <fhirsrc_id> [same options, plus --name n --fhir-base-url u]
//   bun run orgs sources                            source-remove <fhirsrc_id>
import { AppError } from '../shared/errors'
import { createFhirSource, deleteFhirSource, type FhirSourceInput, listFhirSources, updateFhirSource } from '../shared/patients/fhir-sources'
import { ListCursor } from '../shared/patients/list-page'
import { createOrgApiKey, listOrgApiKeys, revokeOrgApiKey } from '../shared/patients/org-api-keys'
import { createOrganization, listOrganizations } from '../shared/patients/organizations'
import { configOrExit, openRuntime } from '../shared/runtime'

const usage = `usage: bun run orgs <command>
  create <name> | list
  key-create <org_id> [label] [--version YYYY-MM-DD] | keys <org_id> | key-revoke <org_id> <key_id>
  source-add <name> <fhir_base_url> [--type t] [--logo-url u] [--portal-url u] [--client-id id] [--client-secret s] [--scopes s]
  source-update <fhirsrc_id> [--name n] [--fhir-base-url u] [--type t] [--logo-url u] [--portal-url u] [--client-id id] [--client-secret s] [--scopes s]
  sources | source-remove <fhirsrc_id>`

const OPTIONS: Record<string, keyof FhirSourceInput | 'version'> = {
  '--name': 'name',
  '--fhir-base-url': 'fhir_base_url',
  '--type': 'type',
  '--logo-url': 'logo_url',
  '--portal-url': 'portal_url',
  '--client-id': 'client_id',
  '--client-secret': 'client_secret',
  '--scopes': 'scopes',
  '--version': 'version',
}

/** Positional arguments and --options (each option takes one value). */
function parseArgs(argv: string[]): { pos: string[]; opts: Record<string, string> } {
  const pos: string[] = []
  const opts: Record<string, string> = {}
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (!a.startsWith('--')) pos.push(a)
    else if (OPTIONS[a] && argv[i + 1] !== undefined) opts[OPTIONS[a]] = argv[++i]
    else throw new Error(`unknown or incomplete option ${a}`)
  }
  return { pos, opts }
}

const [cmd, ...rest] = process.argv.slice(2)
const rt = await openRuntime(configOrExit())
try {
  const { pos, opts } = parseArgs(rest)
  const sql = rt.sql
  if (cmd === 'create' && pos[0]) {
    const org = await createOrganization(sql, pos[0])
    console.log(`created organization ${org.id} (${org.name})`)
  } else if (cmd === 'list') {
    for (const o of await listOrganizations(sql)) console.log(`${o.id}\t${o.created_at}\t${o.name}`)
  } else if (cmd === 'key-create' && pos[0]) {
    const k = await createOrgApiKey(sql, pos[0], { label: pos[1], version: opts.version })
    console.log(`created key ${k.id} for ${k.organization_id} (Version ${k.version}); shown once:\n${k.key}`)
  } else if (cmd === 'keys' && pos[0]) {
    for (const k of await listOrgApiKeys(sql, pos[0]))
      console.log(`${k.id}\t${k.prefix}…\t${k.version}\t${k.label}\t${k.revoked_at ? `revoked ${k.revoked_at}` : 'active'}`)
  } else if (cmd === 'key-revoke' && pos[0] && pos[1]) {
    const k = await revokeOrgApiKey(sql, pos[0], pos[1])
    console.log(`revoked key ${k.id}`)
  } else if (cmd === 'source-add' && pos[0] && pos[1]) {
    const s = await createFhirSource(rt, { ...opts, name: pos[0], fhir_base_url: pos[1] })
    console.log(`created FHIR source ${s.id} (${s.name}, ${s.fhir_base_url})`)
  } else if (cmd === 'source-update' && pos[0]) {
    const s = await updateFhirSource(rt, pos[0], opts)
    console.log(`updated FHIR source ${s.id} (${s.name}, ${s.fhir_base_url})`)
  } else if (cmd === 'sources') {
    const cursor = ListCursor.of('cli', 'cli', 'sources', {})
    let after: { createdAt: Date; seq: string } | undefined
    for (;;) {
      const page = await listFhirSources(sql, cursor, { limit: 100, after }, {})
      for (const s of page.data) console.log(`${s.id}\t${s.type ?? '-'}\t${s.fhir_base_url}\t${s.name}`)
      if (!page.next_cursor) break
      after = cursor.decode(page.next_cursor)
    }
  } else if (cmd === 'source-remove' && pos[0]) {
    await deleteFhirSource(sql, pos[0])
    console.log(`removed FHIR source ${pos[0]}`)
  } else {
    console.error(usage)
    process.exitCode = 2
  }
} catch (err) {
  console.error(err instanceof AppError ? `error: ${err.message}` : String((err as Error).message ?? err))
  process.exitCode = 1
} finally {
  await rt.close()
}
