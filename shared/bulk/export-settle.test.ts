import { expect, test } from 'bun:test'
import { createSql } from '../db/client'
import { lateFrom, lateWork, SETTLE_MS, type Unsettled, type UnsettledChunk } from './export-settle'

const chunk = (fileId: string, n: number, type: string, after: string, upTo: string): UnsettledChunk => ({ fileId, n, type, after, upTo, count: 1, bytes: 10 })

test('a late row is rewritten in the chunks of its type whose rid range holds it; one no chunk holds is added', () => {
  const a = chunk('Patient-1', 0, 'Patient', '0', '900')
  const b = chunk('Observation-1', 0, 'Observation', '0', '900')
  const c = chunk('Patient-1', 1, 'Patient', '900', '1800')
  const split = chunk('Patient-2', 0, 'Patient', '900', '1800') // the type's file split inside that flush
  const u: Unsettled = { lateFrom: '2026-11-26T00:00:00Z', chunks: [a, b, c, split] }
  const work = lateWork(u, [
    { rid: '1000', type: 'Patient' },
    { rid: '1200', type: 'Patient' },
    { rid: '900', type: 'Observation' }, // the upper bound is in the range
    { rid: '1500', type: 'Encounter' }, // no Encounter chunk there
  ])
  expect(work.chunks).toEqual([c, split, b])
  expect(work.uncovered).toEqual(['1500'])
  expect(lateWork(u, [])).toEqual({ chunks: [], uncovered: [] })
})

test('lateFrom: an open transaction moves the instant back, at most by the time settle() waits for one', async () => {
  const sql = createSql(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', { max: 2 })
  try {
    let release = () => {}
    const held = new Promise<void>((r) => (release = r))
    let began = (_at: number) => {}
    const begun = new Promise<number>((r) => (began = r))
    const open = sql.begin(async (tx) => {
      const [row] = await tx<{ at: Date }[]>`select now() as at` // the transaction's start
      began(row.at.getTime())
      await held
    })
    const start = await begun
    await Bun.sleep(600) // the transaction is now more than 600 ms old
    const unbounded = Date.parse(await lateFrom(sql))
    const before = Date.now()
    const bounded = Date.parse(await lateFrom(sql, 200))
    const after = Date.now()
    release()
    await open
    // Back to the start of the open transaction (or of an older one of this database) less SETTLE_MS.
    expect(unbounded).toBeLessThanOrEqual(start - SETTLE_MS)
    // Bounded: the statement's now() less 200 ms and SETTLE_MS, the transaction being older than 200 ms.
    // (Timestamps are read to the millisecond on both sides: 1 ms of slack.)
    expect(bounded).toBeGreaterThanOrEqual(before - 200 - SETTLE_MS - 1)
    expect(bounded).toBeLessThanOrEqual(after - 200 - SETTLE_MS + 1)
  } finally {
    await sql.end()
  }
})
