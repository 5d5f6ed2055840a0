// The store of jobs' texts (shared/jobs/blobs.ts) against a Redis of its own that goes down and comes
// back: texts and bytes round-trip, a command fails at once while Redis is down, and the store works again
// once Redis is back, without a restart.
import { afterAll, expect, test } from 'bun:test'
import { BlobStore } from '../shared/jobs/blobs'
import { defineJob } from '../shared/jobs/definition'
import { Type } from '@sinclair/typebox'

const port = 20000 + Math.floor(Math.random() * 20000)
const startRedis = () =>
  Bun.spawnSync(['redis-server', '--port', String(port), '--bind', '127.0.0.1', '--daemonize', 'yes', '--save', '', '--appendonly', 'no'])
const stopRedis = () => Bun.spawnSync(['redis-cli', '-p', String(port), 'shutdown', 'nosave'])

async function waitFor(up: boolean): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const ok = Bun.spawnSync(['redis-cli', '-p', String(port), 'ping'])
      .stdout.toString()
      .includes('PONG')
    if (ok === up) return
    await Bun.sleep(50)
  }
  throw new Error(`redis on ${port} did not go ${up ? 'up' : 'down'}`)
}

const def = defineJob('blob-test', Type.Object({ body: Type.String() }))
const store = new BlobStore(`redis://127.0.0.1:${port}`, 'test_blobstore')
afterAll(() => {
  store.close()
  stopRedis()
})

test('texts and bytes round-trip; while Redis is down commands fail at once; then they work again', async () => {
  startRedis()
  await waitFor(true)
  const key = store.key(def, 'job-1', 'body')
  expect(key).toBe('test_blobstore:blob-test:blob:job-1:body')
  await store.put(key, 'Müller 日本', 60)
  expect(await store.get(key)).toBe('Müller 日本')
  await store.put(key, new TextEncoder().encode('{"a":"Ł"}'), 60)
  expect(await store.get(key)).toBe('{"a":"Ł"}')

  stopRedis()
  await waitFor(false)
  const started = performance.now()
  await expect(store.put(key, 'x', 60)).rejects.toThrow()
  await expect(store.get(key)).rejects.toThrow()
  expect(performance.now() - started).toBeLessThan(10_000) // with Bun's own reconnection, about 31 s

  startRedis()
  await waitFor(true)
  await store.put(key, 'back', 60)
  expect(await store.get(key)).toBe('back')
  await store.drop([key])
  expect(await store.get(key)).toBeNull()
}, 30_000)
