// The development switch AUTH_DISABLED=true: /fhir accepts requests without a key.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startTestServer, type TestServer } from './harness'

/** The JSON body of a response, untyped (FHIR resources are checked field by field). */
const readJson = (res: Response): Promise<any> => res.json()

let s: TestServer

beforeAll(async () => {
  s = await startTestServer({ AUTH_DISABLED: 'true' })
})

afterAll(async () => {
  await s.stop()
})

test('create and read without a key', async () => {
  const post = await s.fhirFetch('/Patient', { method: 'POST', json: { resourceType: 'Patient', active: true }, key: null })
  expect(post.status).toBe(201)
  const id = (await readJson(post)).id
  const read = await s.fhirFetch(`/Patient/${id}`, { key: null })
  expect(read.status).toBe(200)
  expect((await readJson(read)).active).toBe(true)
})
