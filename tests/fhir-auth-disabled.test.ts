// The development switch AUTH_DISABLED=true: /fhir accepts requests without a key.
import { expect, test } from 'bun:test'
import { readJson, useTestServer } from './harness'

const s = useTestServer({ AUTH_DISABLED: 'true' })

test('create and read without a key', async () => {
  const post = await s.fhirFetch('/Patient', { method: 'POST', json: { resourceType: 'Patient', active: true }, key: null })
  expect(post.status).toBe(201)
  const id = (await readJson(post)).id
  const read = await s.fhirFetch(`/Patient/${id}`, { key: null })
  expect(read.status).toBe(200)
  expect((await readJson(read)).active).toBe(true)
})
