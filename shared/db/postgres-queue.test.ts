// postgres.js keeps its pending queries and its busy connections in a small queue (src/queue.js). As
// published (3.4.9) a queue that never drains, which is every connection busy under steady load, keeps
// each shifted-out slot forever, and every remove() scans them all: request cost grew with uptime
// (12,000 reads/s falling to 7,000 within a minute). patches/postgres@3.4.9.patch drops dead slots.
import { describe, expect, test } from 'bun:test'
import { heapStats } from 'bun:jsc'
// @ts-expect-error: an internal module of the package, without types
import Queue from '../../node_modules/postgres/src/queue.js'

describe('postgres.js queue (patched)', () => {
  test('stays first-in first-out and removes by identity while it never drains', () => {
    const q = Queue()
    const items = Array.from({ length: 10_000 }, (_, i) => ({ i }))
    q.push(items[0])
    q.push(items[1])
    let next = 0
    for (let i = 2; i < items.length; i++) {
      q.push(items[i])
      expect(q.shift()).toBe(items[next++])
    }
    expect(q.length).toBe(2)
    expect(q.remove(items[next])).toBe(items[next])
    expect(q.remove(items[next])).toBeNull()
    expect(q.length).toBe(1)
    expect(q.shift()).toBe(items[items.length - 1])
    expect(q.length).toBe(0)
  })

  test('does not keep the slots of shifted items', () => {
    const q = Queue()
    const keep = { keep: true }
    q.push(keep)
    Bun.gc(true)
    const before = heapStats().heapSize
    // A million items through a queue that always holds one: unpatched, a million dead slots (8 MB).
    for (let i = 0; i < 1_000_000; i++) {
      q.push(i + 1)
      q.shift()
    }
    Bun.gc(true)
    expect(heapStats().heapSize - before).toBeLessThan(2_000_000)
    expect(q.remove(keep)).toBeNull() // shifted out long ago
    expect(q.length).toBe(1)
  }, 120_000) // two full collections of the suite's heap: 2.8 s in the CI run (0.3 s alone), CPU bound
})
