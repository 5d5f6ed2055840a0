import { expect, test } from 'bun:test'
import { lateWork, type Unsettled, type UnsettledChunk } from './export-settle'

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
