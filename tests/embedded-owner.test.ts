// One owner per embedded data directory, as real processes: a second `bun run start` on the same DATA_DIR
// refuses at once (before opening PGlite or binding a port) naming the owner's pid; two processes never
// share a port; a lock left by a killed owner is stale and taken over; a clean stop removes it.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { lockFileOf } from '../shared/db/data-dir-owner'
import { ROOT, type Embedded, embeddedEnv, startEmbedded, tempDataDir } from './embedded-process'
import { freePort, type Proc, spawnLogged, stop } from './logged-process'

const procs: Proc[] = []
const dir = tempDataDir({ migrated: true })
const other = tempDataDir({ migrated: true })
let owner: Embedded

beforeAll(async () => {
  owner = await startEmbedded(procs, dir.dataDir)
}, 180_000)

afterAll(async () => {
  for (const p of procs) await stop(p, 'SIGKILL')
  dir.remove()
  other.remove()
})

async function runToEnd(p: Proc): Promise<{ code: number | null; out: string }> {
  const timer = setTimeout(() => p.proc.kill('SIGKILL'), 100_000) // a fresh folder's first start took 40 s on the loaded machine
  await p.proc.exited
  clearTimeout(timer)
  await p.drained // the output read to its end (a fixed 50 ms assumed the reads kept up)
  return { code: p.proc.exitCode, out: p.output.join('') }
}

describe('one owner per embedded data directory', () => {
  test('the owner holds {DATA_DIR}.lock (mode 0600) with its pid and URL', () => {
    const file = lockFileOf(dir.dataDir)
    expect(statSync(file).mode & 0o777).toBe(0o600)
    const record = JSON.parse(readFileSync(file, 'utf8'))
    expect(record).toMatchObject({ pid: owner.proc.pid, url: owner.base })
  })

  test('a second start on the same DATA_DIR refuses at once, naming the owner, and binds no port', async () => {
    const port = freePort()
    const second = spawnLogged(procs, ROOT, 'second', ['bun', 'run', 'bin/start.ts'], embeddedEnv(dir.dataDir, { PORT: String(port) }))
    const { code, out } = await runToEnd(second)
    expect(code).toBe(2)
    expect(out).toContain(`is in use by process ${owner.proc.pid}`)
    expect(out).toContain(`kill -TERM ${owner.proc.pid}`)
    expect(out).not.toContain('api listening')
    expect(
      await fetch(`http://127.0.0.1:${port}/healthz`).then(
        () => 'answered',
        () => 'refused',
      ),
    ).toBe('refused')
    // The owner is untouched and still serves.
    expect((await fetch(`${owner.base}/healthz`)).ok).toBe(true)
  })

  test('a lock written on another host is not taken over: the refusal names that host and the lock to remove', async () => {
    const foreign = tempDataDir()
    try {
      mkdirSync(foreign.dataDir, { recursive: true })
      writeFileSync(lockFileOf(foreign.dataDir), JSON.stringify({ pid: 4242, host: 'elsewhere', since: new Date().toISOString() }), { mode: 0o600 })
      const p = spawnLogged(procs, ROOT, 'foreign', ['bun', 'run', 'bin/start.ts'], embeddedEnv(foreign.dataDir, { PORT: String(freePort()) }))
      const { code, out } = await runToEnd(p)
      expect(code).toBe(2)
      expect(out).toContain('in use by process 4242 on host elsewhere')
      expect(out).toContain(`remove ${lockFileOf(foreign.dataDir)}`)
    } finally {
      foreign.remove()
    }
  })

  test("a second server on the owner's port fails to listen instead of sharing it", async () => {
    const second = spawnLogged(procs, ROOT, 'same-port', ['bun', 'run', 'bin/start.ts'], embeddedEnv(other.dataDir, { PORT: String(owner.port) }))
    const { code, out } = await runToEnd(second)
    expect(code).not.toBe(0)
    expect(out).toMatch(/EADDRINUSE|in use/i)
    // Its lock was released as it failed, so the folder is free again.
    expect(existsSync(lockFileOf(other.dataDir))).toBe(false)
  }, 120_000)

  test('after kill -9 the lock is stale: the next start takes the folder over; SIGTERM removes the lock', async () => {
    const pid = owner.proc.pid
    await stop(owner, 'SIGKILL')
    expect(JSON.parse(readFileSync(lockFileOf(dir.dataDir), 'utf8')).pid).toBe(pid)
    owner = await startEmbedded(procs, dir.dataDir)
    expect(JSON.parse(readFileSync(lockFileOf(dir.dataDir), 'utf8')).pid).toBe(owner.proc.pid)
    expect(await stop(owner)).toBe(0)
    expect(existsSync(lockFileOf(dir.dataDir))).toBe(false)
  }, 120_000)
})
