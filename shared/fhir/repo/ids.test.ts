import { expect, test } from 'bun:test'
import type { Sql } from '../../db/client'
import { IdAllocator } from './ids'

/** A stand-in for the sequence (increment 100): each nextval() gives the next block's start. */
function sequence(start: number) {
  let next = start
  const sql = ((_strings: TemplateStringsArray, blocks: number) =>
    Promise.resolve(Array.from({ length: blocks }, () => ({ start: String((next += 100) - 100) })))) as unknown as Sql
  return { sql, moveTo: (n: number) => (next = n) }
}

test('skipPast drops a reserved block that reaches ids given by other means; the next id comes from the sequence', async () => {
  const seq = sequence(100)
  const ids = new IdAllocator(seq.sql)
  expect(await ids.allocate(2)).toEqual(['100', '101'])
  seq.moveTo(1000) // an import of numeric ids up to 950 moved the sequence past them
  ids.skipPast(950n)
  expect(await ids.allocate(1)).toEqual(['1000'])
})

test('skipPast keeps a block entirely past the ids given', async () => {
  const ids = new IdAllocator(sequence(100).sql)
  expect(await ids.allocate(1)).toEqual(['100'])
  ids.skipPast(50n)
  expect(await ids.allocate(1)).toEqual(['101'])
})
