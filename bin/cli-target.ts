// Where a CLI command runs. With DATABASE_URL: here, on that database (every API node hears of key changes
// through LISTEN/NOTIFY). On the embedded database: if a process owns the data directory (a running
// `bun run start`), the command is sent to it (api/admin/cli.ts, with the token of its lock file) and
// runs there; if none does, here, on the folder this process then owns until it exits.
import { runKeys } from '../shared/cli/keys'
import { runOrgs } from '../shared/cli/orgs'
import type { CliResult, CliTool } from '../shared/cli/output'
import { liveOwnerOf, type OwnerRecord } from '../shared/db/data-dir-owner'
import { configOrExit, openRuntime } from '../shared/runtime'

async function viaOwner(owner: OwnerRecord, tool: CliTool, args: string[]): Promise<CliResult> {
  const fail = (why: string): CliResult => ({
    code: 1,
    out: [],
    err: [
      `the data directory is owned by process ${owner.pid}${owner.url ? ` (${owner.url})` : ''}, which ${why}; retry once it answers, or stop it (kill -TERM ${owner.pid})`,
    ],
  })
  if (!owner.url || !owner.token) return fail('is not serving yet (still starting, or another CLI command)')
  try {
    const res = await fetch(`${owner.url}/admin/cli`, {
      method: 'POST',
      headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ tool, args }),
      signal: AbortSignal.timeout(60_000),
    })
    const body = (await res.json()) as CliResult & { error?: { message?: string } }
    if (res.status !== 200) return fail(`refused the command: ${res.status} ${body.error?.message ?? ''}`)
    return body
  } catch (err) {
    return fail(`did not answer: ${(err as Error).message}`)
  }
}

/** Runs `bun run <tool> ...args` where it must run, prints its answer and exits with its code. */
export async function runTool(tool: CliTool, args: string[]): Promise<never> {
  const config = configOrExit()
  const owner = config.databaseUrl ? undefined : liveOwnerOf(config.dataDir)
  let result: CliResult
  if (owner) result = await viaOwner(owner, tool, args)
  else {
    const rt = await openRuntime(config)
    try {
      result = tool === 'keys' ? await runKeys(rt, args) : await runOrgs(rt, args)
    } finally {
      await rt.close()
    }
  }
  for (const line of result.out) process.stdout.write(`${line}\n`)
  for (const line of result.err) process.stderr.write(`${line}\n`)
  process.exit(result.code)
}
