// Work the embedded form answered 202 for is never lost: respond-async Bundles posted, the server killed
// with SIGKILL right after the last 202, started again on the same DATA_DIR: every status URL ends 200
// with the transaction-response, and each Bundle's resources are there exactly once. A batch cut while it
// ran is not run twice (its entries would be applied again): it ends 200, or with the reason it stopped.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { call, type Embedded, startEmbedded, tempDataDir } from './embedded-process'
import { type Proc, stop } from './logged-process'

const procs: Proc[] = []
const dir = tempDataDir({ migrated: true })
let server: Embedded

beforeAll(async () => {
  server = await startEmbedded(procs, dir.dataDir)
}, 180_000)

afterAll(async () => {
  for (const p of procs) await stop(p, 'SIGKILL')
  dir.remove()
})

const ENTRIES = 15
const family = (round: number, i: number) => `Async${round}x${i}`

function bundle(type: 'transaction' | 'batch', fam: string) {
  return {
    resourceType: 'Bundle',
    type,
    entry: Array.from({ length: ENTRIES }, (_, k) => ({
      resource: { resourceType: 'Patient', name: [{ family: fam, given: [`G${k}`] }] },
      request: { method: 'POST', url: 'Patient' },
    })),
  }
}

/** Posts with Prefer: respond-async; the status path (under /fhir) of the 202. */
async function postAsync(body: unknown): Promise<string> {
  const res = await call(server.base, '/fhir', { method: 'POST', json: body, headers: { prefer: 'respond-async' } })
  await res.arrayBuffer()
  expect(res.status).toBe(202)
  const location = res.headers.get('content-location') as string
  return location.slice(location.indexOf('/fhir'))
}

/** Polls a status URL until it is no longer 202: its status and body. */
async function outcome(path: string): Promise<{ status: number; body: any }> {
  for (const until = Date.now() + 90_000; Date.now() < until; await Bun.sleep(50)) {
    const res = await call(server.base, path)
    if (res.status === 202) {
      await res.arrayBuffer()
      continue
    }
    return { status: res.status, body: await res.json() }
  }
  throw new Error(`${path} still running after 90 s`)
}

async function count(fam: string): Promise<number> {
  const res = await call(server.base, `/fhir/Patient?family:exact=${fam}&_summary=count`)
  return ((await res.json()) as any).total
}

test('kill -9 right after the 202s: every accepted Bundle is applied once after the restart (2 rounds)', async () => {
  for (let round = 0; round < 2; round++) {
    const kinds = Array.from({ length: 12 }, (_, i) => (i % 4 === 3 ? 'batch' : 'transaction') as 'transaction' | 'batch')
    const paths = await Promise.all(kinds.map((type, i) => postAsync(bundle(type, family(round, i)))))
    await stop(server, 'SIGKILL')
    server = await startEmbedded(procs, dir.dataDir)
    // Some were still waiting (or running) when it was killed: the new process ran them again.
    expect(server.output.join('')).toContain('"msg":"jobs resumed"')
    for (const [i, path] of paths.entries()) {
      const { status, body } = await outcome(path)
      const n = await count(family(round, i))
      if (kinds[i] === 'batch' && status !== 200) {
        // Cut while it ran: never run a second time, and it says so.
        expect(body.issue[0].diagnostics).toContain('is not run again')
        expect(n).toBeLessThanOrEqual(ENTRIES)
        continue
      }
      expect({ i, status }).toEqual({ i, status: 200 })
      expect(body.type).toBe(`${kinds[i]}-response`)
      expect(body.entry).toHaveLength(ENTRIES)
      for (const e of body.entry) {
        expect(e.response.status).toBe('201 Created')
        const read = await call(server.base, `/fhir/${e.response.location.split('/_history')[0]}`)
        expect(read.status).toBe(200)
        expect(((await read.json()) as any).name[0].family).toBe(family(round, i))
      }
      expect({ i, n }).toEqual({ i, n: ENTRIES })
    }
  }
}, 240_000)
