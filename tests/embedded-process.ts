// The embedded form as real processes for tests: `bun run bin/start.ts` on a temporary DATA_DIR (no
// DATABASE_URL, no REDIS_URL), and the CLI run against the same folder.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { copyMigratedDataDir } from './embedded-template'
import { freePort, type Proc, spawnLogged, stop, tail } from './logged-process'

export const ROOT = join(import.meta.dir, '..')
export const EMBEDDED_KEY = 'embedded-owner-admin-key-0123456789'

/** The environment of an embedded process: no DATABASE_URL nor REDIS_URL, whatever the suite has. */
export function embeddedEnv(dataDir: string, extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v
  // Empty is unset (config.ts), and spawnLogged adds this process's environment back.
  return { ...env, DATABASE_URL: '', REDIS_URL: '', DATA_DIR: dataDir, HOST: '127.0.0.1', ADMIN_API_KEY: EMBEDDED_KEY, LOG_LEVEL: 'info', ...extra }
}

/** A DATA_DIR in a temporary folder (which also takes its lock and key files); `migrated`: holding a
 *  database with every migration applied (embedded-template.ts), so that a first start only opens it. */
export function tempDataDir(opts: { migrated?: boolean } = {}): { dataDir: string; remove(): void } {
  const parent = mkdtempSync(join(tmpdir(), 'fhir-embedded-'))
  const dataDir = join(parent, 'pglite')
  if (opts.migrated) copyMigratedDataDir(dataDir)
  return { dataDir, remove: () => rmSync(parent, { recursive: true, force: true }) }
}

export interface Embedded extends Proc {
  base: string
  port: number
}

/** Spawns bin/start.ts and waits for its first answer (throws with its output if it exits first). */
export async function startEmbedded(procs: Proc[], dataDir: string, port = freePort(), ms = 150_000): Promise<Embedded> {
  const p = spawnLogged(procs, ROOT, `embedded:${port}`, ['bun', 'run', 'bin/start.ts'], embeddedEnv(dataDir, { PORT: String(port) }))
  const base = `http://127.0.0.1:${port}`
  for (const until = Date.now() + ms; Date.now() < until; await Bun.sleep(25)) {
    if (p.proc.exitCode !== null) throw new Error(`bin/start.ts exited (${p.proc.exitCode}):\n${tail(p)}`)
    if (
      await fetch(`${base}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return { ...p, base, port }
  }
  await stop(p, 'SIGKILL')
  throw new Error(`bin/start.ts answered nothing within ${ms} ms:\n${tail(p)}`)
}

/** Runs a CLI script (bin/keys.ts, bin/orgs.ts) to its end with `env`; its exit code and output. */
export async function runCli(script: string, args: string[], env: Record<string, string>): Promise<{ code: number; out: string }> {
  const proc = Bun.spawn(['bun', 'run', script, ...args], { cwd: ROOT, env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  return { code: await proc.exited, out: out + err }
}

/** A FHIR or admin request with the admin key (or `key`). */
export function call(base: string, path: string, init: RequestInit & { json?: unknown; key?: string } = {}): Promise<Response> {
  const headers = new Headers(init.headers)
  headers.set('authorization', `Bearer ${init.key ?? EMBEDDED_KEY}`)
  if (init.json !== undefined) headers.set('content-type', path.startsWith('/fhir') ? 'application/fhir+json' : 'application/json')
  return fetch(`${base}${path}`, { ...init, headers, body: init.json !== undefined ? JSON.stringify(init.json) : init.body })
}
