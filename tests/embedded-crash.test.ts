// Crash safety of the embedded form, as real processes: while clients write continuously, the server is
// killed with SIGKILL at an arbitrary moment, started again on the same DATA_DIR, and every write it had
// answered 2xx must be there. SIGTERM and SIGINT stop it under load and with a request hung mid-body.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { call, type Embedded, startEmbedded, tempDataDir } from './embedded-process'
import { type Proc, stop } from './logged-process'

const procs: Proc[] = []
const dir = tempDataDir({ migrated: true })
let server: Embedded

beforeAll(async () => {
  server = await startEmbedded(procs, dir.dataDir)
}, 60_000)

afterAll(async () => {
  for (const p of procs) await stop(p, 'SIGKILL')
  dir.remove()
})

/** Writers that create Patients (and small transactions) until stopped; the ids answered 2xx. */
function writeLoad(base: string, writers = 4) {
  const acked: string[] = []
  let running = true
  let n = 0
  const one = async () => {
    const i = n++
    if (i % 5 === 4) {
      const res = await call(base, '/fhir', {
        method: 'POST',
        json: {
          resourceType: 'Bundle',
          type: 'transaction',
          entry: [0, 1].map((k) => ({ resource: { resourceType: 'Patient', name: [{ family: `Tx${i}-${k}` }] }, request: { method: 'POST', url: 'Patient' } })),
        },
      })
      if (res.status !== 200) return void (await res.body?.cancel())
      const bundle: any = await res.json()
      for (const e of bundle.entry) acked.push(e.response.location.split('/')[1])
    } else {
      const res = await call(base, '/fhir/Patient', { method: 'POST', json: { resourceType: 'Patient', name: [{ family: `Crash${i}` }] } })
      if (res.status !== 201) return void (await res.body?.cancel())
      acked.push(((await res.json()) as any).id)
    }
  }
  const loops = [...Array(writers)].map(async () => {
    while (running) await one().catch(() => {})
  })
  return {
    acked,
    async stop() {
      running = false
      await Promise.all(loops)
    },
  }
}

async function missing(base: string, ids: string[]): Promise<string[]> {
  const gone: string[] = []
  for (const id of ids) {
    const res = await call(base, `/fhir/Patient/${id}`)
    await res.body?.cancel()
    if (res.status !== 200) gone.push(`${id}:${res.status}`)
  }
  return gone
}

describe('embedded crash safety', () => {
  test('kill -9 under a write load loses no acknowledged write (3 rounds)', async () => {
    const all: string[] = []
    for (let round = 0; round < 3; round++) {
      const load = writeLoad(server.base)
      // Kill at a different point of each round, once some writes have been answered.
      while (load.acked.length < 20 + round * 37) await Bun.sleep(5)
      await stop(server, 'SIGKILL')
      await load.stop()
      all.push(...load.acked)
      server = await startEmbedded(procs, dir.dataDir)
      expect(await missing(server.base, all)).toEqual([])
    }
    expect(all.length).toBeGreaterThan(60)
  }, 120_000)

  test('an admin job cut by kill -9 resumes from its checkpoint at the next start and completes', async () => {
    const started: any = await (
      await call(server.base, '/fhir/$reindex', {
        method: 'POST',
        json: { resourceType: 'Parameters', parameter: [{ name: 'batchSize', valueInteger: 1 }] },
      })
    ).json()
    const id = started.parameter[0].valueString
    const job = async () => (await (await call(server.base, `/admin/jobs/${id}`)).json()) as any
    let seen: any
    while ((seen = await job()).state === 'queued' || (seen.state === 'running' && seen.processed === 0)) await Bun.sleep(2)
    expect(seen).toMatchObject({ state: 'running' })
    expect(seen.processed).toBeLessThan(seen.total)
    await stop(server, 'SIGKILL')
    server = await startEmbedded(procs, dir.dataDir)
    let done: any
    for (const until = Date.now() + 60_000; Date.now() < until; await Bun.sleep(50))
      if ((done = await job()).state !== 'running' && done.state !== 'queued') break
    expect(done).toMatchObject({ state: 'completed' })
    expect(done.processed).toBe(done.total)
  }, 90_000)

  test('SIGTERM under a write load stops it, and what it answered is kept', async () => {
    const load = writeLoad(server.base)
    while (load.acked.length < 20) await Bun.sleep(5)
    expect(await stop(server, 'SIGTERM', 15_000)).toBe(0)
    await load.stop()
    server = await startEmbedded(procs, dir.dataDir)
    expect(await missing(server.base, load.acked)).toEqual([])
  }, 60_000)

  test('SIGINT stops it while a request hangs mid-body', async () => {
    const port = server.port
    const socket = connect(port, '127.0.0.1')
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
    socket.write(
      `POST /fhir/Patient HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer embedded-owner-admin-key-0123456789\r\ncontent-type: application/fhir+json\r\ncontent-length: 100000\r\n\r\n{"resourceType":"Patient",`,
    )
    await Bun.sleep(200)
    server.proc.kill('SIGINT')
    // A guard against a process that never stops (stop() would SIGKILL it after 15 s), not a speed figure.
    const code = await Promise.race([server.proc.exited, Bun.sleep(15_000).then(() => 'still running')])
    socket.destroy()
    expect(code).not.toBe('still running')
  }, 30_000)
})
