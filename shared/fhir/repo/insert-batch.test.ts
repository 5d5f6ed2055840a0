// The batching of plain creates on its own: waiting creates go together into the next free statement
// slot, a failed batch is retried create by create, and after-commit work runs once per statement.
import { describe, expect, test } from 'bun:test'
import { type AfterCommit, InsertBatcher } from './insert-batch'
import type { NewVersion } from './types'

const version = (id: string): NewVersion => ({ rid: id, type: 'Patient', id, version: 1, lastUpdated: new Date(), deleted: false, content: '{}' })

function recorder(fail: (ids: string[]) => boolean = () => false) {
  const statements: string[][] = []
  let afterRuns = 0
  const write = async (versions: NewVersion[]): Promise<AfterCommit> => {
    const ids = versions.map((v) => v.id)
    statements.push(ids)
    await Bun.sleep(5)
    if (fail(ids)) throw new Error(`rejected ${ids.join(',')}`)
    return async () => {
      afterRuns++
    }
  }
  return { statements, write, afterRuns: () => afterRuns }
}

describe('InsertBatcher', () => {
  test('creates that wait for a slot share the next statement; at most `slots` statements run at once', async () => {
    const r = recorder()
    const b = new InsertBatcher(r.write, 2, 64)
    await Promise.all(Array.from({ length: 10 }, (_, i) => b.insert([version(String(i))])))
    // the first two take the two slots alone, the eight that waited go together
    expect(r.statements).toEqual([['0'], ['1'], ['2', '3', '4', '5', '6', '7', '8', '9']])
    expect(r.afterRuns()).toBe(3)
  })

  test('a statement takes at most maxVersions versions', async () => {
    const r = recorder()
    const b = new InsertBatcher(r.write, 1, 3)
    await Promise.all(Array.from({ length: 7 }, (_, i) => b.insert([version(String(i))])))
    expect(r.statements).toEqual([['0'], ['1', '2', '3'], ['4', '5', '6']])
  })

  test('a failed batch is written again create by create: only the failing create rejects', async () => {
    const r = recorder((ids) => ids.includes('5'))
    const b = new InsertBatcher(r.write, 1, 64)
    const outcomes = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => b.insert([version(String(i))])))
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled'])
    expect((outcomes[5] as PromiseRejectedResult).reason.message).toBe('rejected 5')
    expect(r.statements).toEqual([['0'], ['1', '2', '3', '4', '5', '6', '7'], ['1'], ['2'], ['3'], ['4'], ['5'], ['6'], ['7']])
  })

  test('a create alone is not retried: its error is its answer', async () => {
    const r = recorder(() => true)
    const b = new InsertBatcher(r.write, 2, 64)
    await expect(b.insert([version('x')])).rejects.toThrow('rejected x')
    expect(r.statements).toEqual([['x']])
  })
})
