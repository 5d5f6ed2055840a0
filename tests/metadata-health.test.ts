// GET /fhir/metadata (the CapabilityStatement) and the health endpoints /healthz and /readyz.
// https://hl7.org/fhir/R4/http.html#capabilities
import { describe, expect, test } from 'bun:test'
import { readJson, useTestServer } from './harness'

const s = useTestServer()

describe('health', () => {
  // First request after start-up on purpose: a node whose startApi() has resolved must be ready.
  test('GET /readyz: 200 with database and redis "ok"', async () => {
    const res = await fetch(`${s.base}/readyz`)
    expect(res.status).toBe(200)
    const body = await readJson(res)
    expect(body.database).toBe('ok')
    expect(body.redis).toBe('ok')
  })

  test('GET /healthz: 200', async () => {
    const res = await fetch(`${s.base}/healthz`)
    expect(res.status).toBe(200)
  })
})

describe('GET /fhir/metadata', () => {
  test('a CapabilityStatement for FHIR 4.0.1 listing all 146 R4 resource types', async () => {
    const res = await s.fhirFetch('/metadata')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/fhir+json;charset=utf-8')
    const cs = await readJson(res)
    expect(cs.resourceType).toBe('CapabilityStatement')
    expect(cs.fhirVersion).toBe('4.0.1')
    expect(cs.kind).toBe('instance')
    const resources = cs.rest[0].resource
    expect(resources).toHaveLength(146)
    const types = resources.map((r: any) => r.type)
    expect(new Set(types).size).toBe(146)
    for (const t of [
      'Patient',
      'Observation',
      'Bundle',
      'Parameters',
      'OperationOutcome',
      'CapabilityStatement',
      'Binary',
      'MedicinalProductUndesirableEffect',
    ])
      expect(types).toContain(t)
  })

  test('every type has read, vread, update, patch, delete, create and history interactions', async () => {
    const cs = await readJson(await s.fhirFetch('/metadata'))
    for (const r of cs.rest[0].resource) {
      const codes = r.interaction.map((i: any) => i.code)
      for (const code of ['read', 'vread', 'update', 'patch', 'delete', 'create', 'history-instance'])
        expect({ type: r.type, has: codes.includes(code) }).toEqual({ type: r.type, has: true })
    }
  })

  test('lists the operations: the system-level admin operations, and per type the ones that apply', async () => {
    const cs = await readJson(await s.fhirFetch('/metadata'))
    const names = (ops: any[] | undefined) => (ops ?? []).map((o: any) => o.name)
    expect(names(cs.rest[0].operation)).toEqual(
      expect.arrayContaining([
        'reindex',
        'expunge',
        'get-resource-counts',
        'mark-all-resources-for-reindexing',
        'perform-reindexing-pass',
        'meta',
        'reindex-terminology',
      ]),
    )
    const of = (type: string) => names(cs.rest[0].resource.find((r: any) => r.type === type).operation)
    expect(of('Patient')).toEqual(expect.arrayContaining(['everything', 'validate', 'meta', 'meta-add', 'meta-delete', 'expunge', 'reindex']))
    expect(of('ValueSet')).toEqual(expect.arrayContaining(['expand', 'validate-code']))
    expect(of('CodeSystem')).toEqual(expect.arrayContaining(['lookup', 'validate-code']))
    expect(of('Observation')).not.toContain('everything')
    const everything = cs.rest[0].resource.find((r: any) => r.type === 'Patient').operation.find((o: any) => o.name === 'everything')
    expect(everything.definition).toBe('http://hl7.org/fhir/OperationDefinition/Patient-everything')
  })

  test('answers XML with _format=xml', async () => {
    const res = await s.fhirFetch('/metadata?_format=xml')
    expect(res.status).toBe(200)
    expect(await res.text()).toContain('<CapabilityStatement xmlns="http://hl7.org/fhir">')
  })
})
