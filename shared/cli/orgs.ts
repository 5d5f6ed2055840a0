// `bun run orgs`: organizations of the patient API, their API keys and the FHIR source catalog.
//   create <name> | list
//   key-create <org_id> [label] [--version YYYY-MM-DD] (the key is shown once) | keys <org_id> | key-revoke <org_id> <key_id>
//   source-add <name> <fhir_base_url> [--type t] [--logo-url u] [--portal-url u]
//              [--client-id id] [--client-secret s] [--scopes "launch/patient patient/*.read"]
//   source-update <fhirsrc_id> [same options, plus --name n --fhir-base-url u]
//   sources | source-remove <fhirsrc_id>
import { type CatalogDeps, createFhirSource, deleteFhirSource, type FhirSourceInput, listFhirSources, updateFhirSource } from '../patients/fhir-sources'
import { ListCursor } from '../patients/list-page'
import { createOrgApiKey, listOrgApiKeys, revokeOrgApiKey } from '../patients/org-api-keys'
import { createOrganization, listOrganizations } from '../patients/organizations'
import { type CliResult, cliFailure, cliResult, cliUsage } from './output'

export const ORGS_USAGE = `usage: bun run orgs <command>
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

export async function runOrgs(deps: CatalogDeps, argv: string[]): Promise<CliResult> {
  const [cmd, ...rest] = argv
  const res = cliResult()
  const out = (line: string) => res.out.push(line)
  try {
    const { pos, opts } = parseArgs(rest)
    const sql = deps.sql
    if (cmd === 'create' && pos[0]) {
      const org = await createOrganization(sql, pos[0])
      out(`created organization ${org.id} (${org.name})`)
    } else if (cmd === 'list') {
      for (const o of await listOrganizations(sql)) out(`${o.id}\t${o.created_at}\t${o.name}`)
    } else if (cmd === 'key-create' && pos[0]) {
      const k = await createOrgApiKey(sql, pos[0], { label: pos[1], version: opts.version })
      out(`created key ${k.id} for ${k.organization_id} (Version ${k.version}); shown once:\n${k.key}`)
    } else if (cmd === 'keys' && pos[0]) {
      for (const k of await listOrgApiKeys(sql, pos[0]))
        out(`${k.id}\t${k.prefix}…\t${k.version}\t${k.label}\t${k.revoked_at ? `revoked ${k.revoked_at}` : 'active'}`)
    } else if (cmd === 'key-revoke' && pos[0] && pos[1]) {
      const k = await revokeOrgApiKey(sql, pos[0], pos[1])
      out(`revoked key ${k.id}`)
    } else if (cmd === 'source-add' && pos[0] && pos[1]) {
      const s = await createFhirSource(deps, { ...opts, name: pos[0], fhir_base_url: pos[1] })
      out(`created FHIR source ${s.id} (${s.name}, ${s.fhir_base_url})`)
    } else if (cmd === 'source-update' && pos[0]) {
      const s = await updateFhirSource(deps, pos[0], opts)
      out(`updated FHIR source ${s.id} (${s.name}, ${s.fhir_base_url})`)
    } else if (cmd === 'sources') {
      const cursor = ListCursor.of('cli', 'cli', 'sources', {})
      let after: { createdAt: Date; seq: string } | undefined
      for (;;) {
        const page = await listFhirSources(sql, cursor, { limit: 100, after }, {})
        for (const s of page.data) out(`${s.id}\t${s.type ?? '-'}\t${s.fhir_base_url}\t${s.name}`)
        if (!page.next_cursor) break
        after = cursor.decode(page.next_cursor)
      }
    } else if (cmd === 'source-remove' && pos[0]) {
      await deleteFhirSource(sql, pos[0])
      out(`removed FHIR source ${pos[0]}`)
    } else return cliUsage(res, ORGS_USAGE)
    return res
  } catch (err) {
    return cliFailure(res, err)
  }
}
