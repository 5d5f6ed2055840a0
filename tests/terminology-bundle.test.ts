// Terminology fed through a transaction Bundle (the worker path writes through the same hook), and a
// stored CodeSystem or ValueSet that reuses a built-in URL taking precedence over the built-in one.
import { expect, test } from 'bun:test'
import { createResource, readJson, useTestServer } from './harness'

const s = useTestServer()

const SYS = 'http://example.org/fhir/CodeSystem/bundle-severity'
const GENDER_CS = 'http://hl7.org/fhir/administrative-gender'
const GENDER_VS = 'http://hl7.org/fhir/ValueSet/administrative-gender'

const param = (p: any, name: string) => p.parameter.find((x: any) => x.name === name)

test('a CodeSystem and ValueSet posted in a transaction are usable by the next search', async () => {
  const entry = (resource: any) => ({ fullUrl: `urn:uuid:${crypto.randomUUID()}`, resource, request: { method: 'POST', url: resource.resourceType } })
  const bundle = {
    resourceType: 'Bundle',
    type: 'transaction',
    entry: [
      entry({
        resourceType: 'CodeSystem',
        url: SYS,
        status: 'active',
        content: 'complete',
        concept: [{ code: 'severe', concept: [{ code: 'fatal' }, { code: 'critical' }] }, { code: 'mild' }],
      }),
      entry({
        resourceType: 'ValueSet',
        url: `${SYS}/vs-severe`,
        status: 'active',
        compose: { include: [{ system: SYS, filter: [{ property: 'concept', op: 'descendent-of', value: 'severe' }] }] },
      }),
      ...['fatal', 'critical', 'mild', 'severe'].map((code) =>
        entry({ resourceType: 'Condition', subject: { display: code }, severity: { coding: [{ system: SYS, code }] } }),
      ),
    ],
  }
  const res = await s.fhirFetch('', { method: 'POST', json: bundle })
  expect(res.status).toBe(200)
  const severities = async (q: string) => {
    const b = await readJson(await s.fhirFetch(`/Condition?${q}`))
    return (b.entry ?? []).map((e: any) => e.resource.subject.display).sort()
  }
  expect(await severities(`severity:below=${encodeURIComponent(`${SYS}|severe`)}`)).toEqual(['critical', 'fatal', 'severe'])
  expect(await severities(`severity:in=${encodeURIComponent(`${SYS}/vs-severe`)}`)).toEqual(['critical', 'fatal'])
  expect(await severities(`severity:above=${encodeURIComponent(`${SYS}|fatal`)}`)).toEqual(['fatal', 'severe'])
})

test('a stored CodeSystem and ValueSet with a built-in URL win over the built-in ones', async () => {
  const before = await readJson(await s.fhirFetch(`/ValueSet/$expand?url=${encodeURIComponent(GENDER_VS)}`))
  expect(before.expansion.total).toBe(4)
  await createResource(s, {
    resourceType: 'CodeSystem',
    url: GENDER_CS,
    version: 'local-1',
    name: 'LocalGender',
    status: 'active',
    content: 'complete',
    concept: [
      { code: 'male', display: 'Male' },
      { code: 'female', display: 'Female' },
      { code: 'nonbinary', display: 'Non-binary' },
    ],
  })
  const lookup = await readJson(await s.fhirFetch(`/CodeSystem/$lookup?system=${encodeURIComponent(GENDER_CS)}&code=nonbinary`))
  expect(param(lookup, 'name').valueString).toBe('LocalGender')
  expect(param(lookup, 'version').valueString).toBe('local-1')
  // the built-in value set includes the whole system: it now expands to the stored system's codes
  const after = await readJson(await s.fhirFetch(`/ValueSet/$expand?url=${encodeURIComponent(GENDER_VS)}`))
  expect(after.expansion.contains.map((c: any) => c.code)).toEqual(['male', 'female', 'nonbinary'])
  await createResource(s, {
    resourceType: 'ValueSet',
    url: GENDER_VS,
    status: 'active',
    compose: { include: [{ system: GENDER_CS, concept: [{ code: 'female' }] }] },
  })
  const own = await readJson(await s.fhirFetch(`/ValueSet/$expand?url=${encodeURIComponent(GENDER_VS)}`))
  expect(own.expansion.contains.map((c: any) => c.code)).toEqual(['female'])
})
