// Terminology over HTTP: $expand of a built-in R4 value set and of stored ones, $lookup, $validate-code,
// :in / :not-in / :below / :above token search against built-in and stored CodeSystems and ValueSets
// (usable as soon as they are stored, kept in step on update and delete), and $reindex-terminology.
import { describe, expect, test } from 'bun:test'
import { createApiKey } from '../shared/auth/api-keys'
import { ADMIN_KEY, createResource, readJson, useTestServer } from './harness'

const s = useTestServer()

const GENDER_VS = 'http://hl7.org/fhir/ValueSet/administrative-gender'
const GENDER_CS = 'http://hl7.org/fhir/administrative-gender'
const LOINC = 'http://loinc.org'
const BODY_CS = 'http://example.org/fhir/CodeSystem/body-findings'

// A hierarchy: A > A1 > A11, A > A2 (nesting), and B whose parent A2 is given as a property.
const bodyCodeSystem = {
  resourceType: 'CodeSystem',
  url: BODY_CS,
  version: '1',
  name: 'BodyFindings',
  status: 'active',
  content: 'complete',
  hierarchyMeaning: 'is-a',
  concept: [
    {
      code: 'A',
      display: 'Any finding',
      concept: [
        { code: 'A1', display: 'Finding one', designation: [{ language: 'de', value: 'Befund eins' }], concept: [{ code: 'A11', display: 'Finding one-one' }] },
        { code: 'A2', display: 'Finding two' },
      ],
    },
    { code: 'B', display: 'Finding B', property: [{ code: 'parent', valueCode: 'A2' }] },
  ],
}

const ids = async (path: string): Promise<string[]> => {
  const res = await s.fhirFetch(path)
  const body = await readJson(res)
  expect(res.status).toBe(200)
  return (body.entry ?? []).map((e: any) => e.resource.id).sort()
}

const param = (p: any, name: string) => p.parameter.find((x: any) => x.name === name)

describe('$expand', () => {
  test('a built-in R4 value set by url: its four codes, with total, offset and parameters', async () => {
    const t0 = performance.now()
    const res = await s.fhirFetch(`/ValueSet/$expand?url=${encodeURIComponent(GENDER_VS)}`)
    const firstUse = performance.now() - t0
    expect(res.status).toBe(200)
    const vs = await readJson(res)
    expect(vs.resourceType).toBe('ValueSet')
    expect(vs.url).toBe(GENDER_VS)
    expect(vs.expansion.identifier).toMatch(/^urn:uuid:/)
    expect(typeof vs.expansion.timestamp).toBe('string')
    expect(vs.expansion.total).toBe(4)
    expect(vs.expansion.offset).toBe(0)
    expect(vs.expansion.contains.map((c: any) => c.code)).toEqual(['male', 'female', 'other', 'unknown'])
    expect(vs.expansion.contains[0]).toEqual({ system: GENDER_CS, version: '4.0.1', code: 'male', display: 'Male' })
    console.log(`first terminology use (built-in load) ${firstUse.toFixed(0)} ms`)
  })

  test('filter, offset and count page the expansion', async () => {
    const filtered = await readJson(await s.fhirFetch(`/ValueSet/$expand?url=${encodeURIComponent(GENDER_VS)}&filter=MAL`))
    expect(filtered.expansion.total).toBe(2) // male, female
    const page = await readJson(await s.fhirFetch(`/ValueSet/$expand?url=${encodeURIComponent(GENDER_VS)}&offset=1&count=2`))
    expect(page.expansion.total).toBe(4)
    expect(page.expansion.offset).toBe(1)
    expect(page.expansion.contains.map((c: any) => c.code)).toEqual(['female', 'other'])
    expect(page.expansion.parameter).toEqual([
      { name: 'offset', valueInteger: 1 },
      { name: 'count', valueInteger: 2 },
    ])
  })

  test('a v3 value set defined by an is-a filter expands through the closure table', async () => {
    const vs = await readJson(await s.fhirFetch(`/ValueSet/$expand?url=${encodeURIComponent('http://terminology.hl7.org/ValueSet/v3-ActEncounterCode')}`))
    const codes = vs.expansion.contains.map((c: any) => c.code)
    expect(codes).toContain('AMB')
    expect(codes).toContain('IMP')
    expect(codes).not.toContain('_ActCode')
  })

  test('an unknown value set: 404; no url: 400', async () => {
    const res = await s.fhirFetch(`/ValueSet/$expand?url=${encodeURIComponent('http://example.org/nope')}`)
    expect(res.status).toBe(404)
    expect(JSON.stringify(await readJson(res))).toContain('Unknown ValueSet')
    expect((await s.fhirFetch('/ValueSet/$expand')).status).toBe(400)
  })

  test('a stored ValueSet: by url and at instance level, drawing on a stored CodeSystem through a filter', async () => {
    await createResource(s, bodyCodeSystem)
    const stored = await createResource(s, {
      resourceType: 'ValueSet',
      url: 'http://example.org/fhir/ValueSet/finding-one-and-gender',
      status: 'active',
      compose: {
        include: [
          { system: BODY_CS, filter: [{ property: 'concept', op: 'is-a', value: 'A1' }] },
          { system: GENDER_CS, concept: [{ code: 'female' }] },
        ],
      },
    })
    const byUrl = await readJson(await s.fhirFetch(`/ValueSet/$expand?url=${encodeURIComponent(stored.url)}`))
    expect(byUrl.id).toBe(stored.id)
    expect(byUrl.expansion.contains).toEqual([
      { system: BODY_CS, version: '1', code: 'A1', display: 'Finding one' },
      { system: BODY_CS, version: '1', code: 'A11', display: 'Finding one-one' },
      { system: GENDER_CS, version: '4.0.1', code: 'female', display: 'Female' },
    ])
    const instance = await readJson(await s.fhirFetch(`/ValueSet/${stored.id}/$expand?count=1`))
    expect(instance.expansion.total).toBe(3)
    expect(instance.expansion.contains).toHaveLength(1)
  })

  test('an inline ValueSet POSTed in Parameters', async () => {
    const res = await s.fhirFetch('/ValueSet/$expand', {
      method: 'POST',
      json: {
        resourceType: 'Parameters',
        parameter: [
          {
            name: 'valueSet',
            resource: {
              resourceType: 'ValueSet',
              status: 'draft',
              compose: { include: [{ system: GENDER_CS }], exclude: [{ system: GENDER_CS, concept: [{ code: 'unknown' }] }] },
            },
          },
        ],
      },
    })
    expect(res.status).toBe(200)
    expect((await readJson(res)).expansion.contains.map((c: any) => c.code)).toEqual(['male', 'female', 'other'])
  })
})

describe('$lookup', () => {
  test('a built-in code: name, version, display, abstract', async () => {
    const res = await s.fhirFetch(`/CodeSystem/$lookup?system=${encodeURIComponent(GENDER_CS)}&code=male`)
    expect(res.status).toBe(200)
    const p = await readJson(res)
    expect(p.resourceType).toBe('Parameters')
    expect(param(p, 'name').valueString).toBe('AdministrativeGender')
    expect(param(p, 'version').valueString).toBe('4.0.1')
    expect(param(p, 'display').valueString).toBe('Male')
    expect(param(p, 'abstract').valueBoolean).toBe(false)
  })

  test('a stored code: parent and child properties, designations; POST with a coding', async () => {
    const res = await s.fhirFetch('/CodeSystem/$lookup', {
      method: 'POST',
      json: { resourceType: 'Parameters', parameter: [{ name: 'coding', valueCoding: { system: BODY_CS, code: 'A1' } }] },
    })
    expect(res.status).toBe(200)
    const p = await readJson(res)
    expect(param(p, 'display').valueString).toBe('Finding one')
    const props = p.parameter.filter((x: any) => x.name === 'property').map((x: any) => `${x.part[0].valueCode}=${x.part[1].valueCode}`)
    expect(props.sort()).toEqual(['child=A11', 'parent=A'])
    expect(param(p, 'designation').part).toEqual([
      { name: 'language', valueCode: 'de' },
      { name: 'value', valueString: 'Befund eins' },
    ])
  })

  test('an unknown code or system: 404 as HAPI', async () => {
    const res = await s.fhirFetch(`/CodeSystem/$lookup?system=${encodeURIComponent(GENDER_CS)}&code=bogus`)
    expect(res.status).toBe(404)
    expect(JSON.stringify(await readJson(res))).toContain(`Unable to find code[bogus] in system[${GENDER_CS}]`)
    expect((await s.fhirFetch('/CodeSystem/$lookup?system=http://example.org/none&code=x')).status).toBe(404)
    expect((await s.fhirFetch('/CodeSystem/$lookup?code=male')).status).toBe(400)
  })
})

describe('$validate-code', () => {
  test('ValueSet: a member is valid with its display, another code is not', async () => {
    const ok = await readJson(
      await s.fhirFetch(`/ValueSet/$validate-code?url=${encodeURIComponent(GENDER_VS)}&system=${encodeURIComponent(GENDER_CS)}&code=female`),
    )
    expect(param(ok, 'result').valueBoolean).toBe(true)
    expect(param(ok, 'display').valueString).toBe('Female')
    const bad = await readJson(
      await s.fhirFetch(`/ValueSet/$validate-code?url=${encodeURIComponent(GENDER_VS)}&system=${encodeURIComponent(GENDER_CS)}&code=robot`),
    )
    expect(param(bad, 'result').valueBoolean).toBe(false)
    expect(param(bad, 'message').valueString).toContain('robot')
    const concept = await s.fhirFetch('/ValueSet/$validate-code', {
      method: 'POST',
      json: {
        resourceType: 'Parameters',
        parameter: [
          { name: 'url', valueUri: GENDER_VS },
          {
            name: 'codeableConcept',
            valueCodeableConcept: {
              coding: [
                { system: LOINC, code: '8302-2' },
                { system: GENDER_CS, code: 'other' },
              ],
            },
          },
        ],
      },
    })
    expect(param(await readJson(concept), 'result').valueBoolean).toBe(true)
  })

  test('CodeSystem: known and unknown codes, and a display that differs', async () => {
    const ok = await readJson(await s.fhirFetch(`/CodeSystem/$validate-code?url=${encodeURIComponent(BODY_CS)}&code=A11`))
    expect(param(ok, 'result').valueBoolean).toBe(true)
    expect(param(ok, 'display').valueString).toBe('Finding one-one')
    const bad = await readJson(await s.fhirFetch(`/CodeSystem/$validate-code?url=${encodeURIComponent(BODY_CS)}&code=Z9`))
    expect(param(bad, 'result').valueBoolean).toBe(false)
    const display = await readJson(await s.fhirFetch(`/CodeSystem/$validate-code?url=${encodeURIComponent(GENDER_CS)}&code=male&display=Man`))
    expect(param(display, 'result').valueBoolean).toBe(true)
    expect(param(display, 'message').valueString).toContain('does not match')
  })
})

describe(':in and :not-in', () => {
  test('Patient gender against a built-in and a stored value set', async () => {
    const male = await createResource(s, { resourceType: 'Patient', gender: 'male' })
    const female = await createResource(s, { resourceType: 'Patient', gender: 'female' })
    const none = await createResource(s, { resourceType: 'Patient', name: [{ family: 'NoGender' }] })
    const vs = await createResource(s, {
      resourceType: 'ValueSet',
      url: 'http://example.org/fhir/ValueSet/male-only',
      status: 'active',
      compose: { include: [{ system: GENDER_CS, concept: [{ code: 'male' }] }] },
    })
    expect(await ids(`/Patient?gender:in=${encodeURIComponent(GENDER_VS)}`)).toEqual([male.id, female.id].sort())
    expect(await ids(`/Patient?gender:in=${encodeURIComponent(vs.url)}`)).toEqual([male.id])
    // :not-in, like :not, also matches resources without the element
    expect(await ids(`/Patient?gender:not-in=${encodeURIComponent(vs.url)}`)).toEqual([female.id, none.id].sort())
  })

  test('Observation code against a stored value set of LOINC codes; a new version of it applies at once', async () => {
    const height = await createResource(s, {
      resourceType: 'Observation',
      status: 'final',
      code: { coding: [{ system: LOINC, code: '8302-2', display: 'Body height' }] },
    })
    const weight = await createResource(s, {
      resourceType: 'Observation',
      status: 'final',
      code: { coding: [{ system: LOINC, code: '29463-7', display: 'Body weight' }] },
    })
    const pulse = await createResource(s, {
      resourceType: 'Observation',
      status: 'final',
      code: { coding: [{ system: LOINC, code: '8867-4', display: 'Heart rate' }] },
    })
    const vs = await createResource(s, {
      resourceType: 'ValueSet',
      url: 'http://example.org/fhir/ValueSet/body-measures',
      status: 'active',
      compose: { include: [{ system: LOINC, concept: [{ code: '8302-2' }, { code: '29463-7' }] }] },
    })
    const url = encodeURIComponent(vs.url)
    expect(await ids(`/Observation?code:in=${url}`)).toEqual([height.id, weight.id].sort())
    expect(await ids(`/Observation?code:not-in=${url}`)).toEqual([pulse.id])
    const updated = { ...vs, compose: { include: [{ system: LOINC, concept: [{ code: '8867-4' }] }] } }
    expect((await s.fhirFetch(`/ValueSet/${vs.id}`, { method: 'PUT', json: updated })).status).toBe(200)
    expect(await ids(`/Observation?code:in=${url}`)).toEqual([pulse.id])
    expect(await ids(`/Observation?status:in=${encodeURIComponent('http://hl7.org/fhir/ValueSet/observation-status')}&code:in=${url}`)).toEqual([pulse.id])
  })

  test('an unknown value set: 400 with a clear message', async () => {
    const res = await s.fhirFetch(`/Observation?code:in=${encodeURIComponent('http://example.org/no-such-vs')}`)
    expect(res.status).toBe(400)
    expect(JSON.stringify(await readJson(res))).toContain('Unknown ValueSet')
  })
})

describe(':below and :above', () => {
  test('Condition code over a stored hierarchy; updating and deleting the CodeSystem applies at once', async () => {
    const cond = async (code: string) =>
      (await createResource(s, { resourceType: 'Condition', subject: { display: 'x' }, code: { coding: [{ system: BODY_CS, code }] } })).id
    const a1 = await cond('A1')
    const a11 = await cond('A11')
    const a2 = await cond('A2')
    const b = await cond('B')
    const other = (
      await createResource(s, { resourceType: 'Condition', subject: { display: 'x' }, code: { coding: [{ system: 'http://example.org/other', code: 'A1' }] } })
    ).id
    const below = (code: string) => ids(`/Condition?code:below=${encodeURIComponent(`${BODY_CS}|${code}`)}`)
    const above = (code: string) => ids(`/Condition?code:above=${encodeURIComponent(`${BODY_CS}|${code}`)}`)
    expect(await below('A1')).toEqual([a1, a11].sort())
    expect(await below('A')).toEqual([a1, a11, a2, b].sort()) // B through its parent property
    expect(await below('A2')).toEqual([a2, b].sort())
    expect(await above('A11')).toEqual([a1, a11].sort())
    expect(await ids(`/Condition?code=${encodeURIComponent(`http://example.org/other|A1`)}`)).toEqual([other])

    // move A11 under A2
    const [stored] = (await readJson(await s.fhirFetch(`/CodeSystem?url=${encodeURIComponent(BODY_CS)}`))).entry.map((e: any) => e.resource)
    const moved = {
      ...stored,
      concept: [
        { code: 'A', concept: [{ code: 'A1' }, { code: 'A2', concept: [{ code: 'A11' }] }] },
        { code: 'B', property: [{ code: 'parent', valueCode: 'A2' }] },
      ],
    }
    expect((await s.fhirFetch(`/CodeSystem/${stored.id}`, { method: 'PUT', json: moved })).status).toBe(200)
    expect(await below('A1')).toEqual([a1])
    expect(await below('A2')).toEqual([a11, a2, b].sort())

    expect((await s.fhirFetch(`/CodeSystem/${stored.id}`, { method: 'DELETE' })).status).toBe(200)
    const gone = await s.fhirFetch(`/Condition?code:below=${encodeURIComponent(`${BODY_CS}|A1`)}`)
    expect(gone.status).toBe(400)
    expect(JSON.stringify(await readJson(gone))).toContain('unknown code system')
    expect((await s.fhirFetch(`/CodeSystem/$lookup?system=${encodeURIComponent(BODY_CS)}&code=A1`)).status).toBe(404)
    expect((await s.fhirFetch(`/CodeSystem/${stored.id}`, { method: 'PUT', json: moved })).status).toBe(201)
  })

  test('a code the system lacks, or a value without system or code: 400', async () => {
    const unknown = await s.fhirFetch(`/Condition?code:below=${encodeURIComponent(`${BODY_CS}|NOPE`)}`)
    expect(unknown.status).toBe(400)
    expect(JSON.stringify(await readJson(unknown))).toContain('NOPE')
    const noSystem = await s.fhirFetch('/Condition?code:below=A1')
    expect(noSystem.status).toBe(400)
    expect(JSON.stringify(await readJson(noSystem))).toContain('HAPI-1240')
    expect((await s.fhirFetch(`/Condition?code:above=${encodeURIComponent(`${BODY_CS}|`)}`)).status).toBe(400)
  })

  test('uri :below and :above still compare URL prefixes', async () => {
    expect(await ids(`/CodeSystem?url:below=${encodeURIComponent('http://example.org/fhir/CodeSystem')}`)).toHaveLength(1)
    expect(await ids(`/ValueSet?url:above=${encodeURIComponent('http://example.org/fhir/ValueSet/male-only/extra')}`)).toHaveLength(1)
  })
})

describe('$reindex-terminology', () => {
  test('admin scope only: a read key gets 403', async () => {
    const { key } = await createApiKey(s.sql, 'term-reader', ['read'])
    expect((await s.fhirFetch(`/CodeSystem/$lookup?system=${encodeURIComponent(GENDER_CS)}&code=male`, { key })).status).toBe(200)
    const res = await s.fhirFetch('/$reindex-terminology', { method: 'POST', key })
    expect(res.status).toBe(403)
    const { key: writer } = await createApiKey(s.sql, 'term-writer', ['write'])
    expect((await s.fhirFetch('/$reindex-terminology', { method: 'POST', key: writer })).status).toBe(403)
  })

  test('rebuilds the store as an admin job from the built-in and stored resources, answering success', async () => {
    // drop a stored code system's rows behind the server's back: the rebuild restores them
    await s.sql`delete from term_code_system where url = ${BODY_CS}`
    expect((await s.fhirFetch(`/CodeSystem/$lookup?system=${encodeURIComponent(BODY_CS)}&code=A11`)).status).toBe(404)
    const res = await s.fhirFetch('/$reindex-terminology', { method: 'POST' })
    expect(res.status).toBe(200)
    const out = await readJson(res)
    expect(out.resourceType).toBe('Parameters')
    expect(out.parameter[0]).toEqual({ name: 'success', valueBoolean: true })
    const job = await waitForJob(param(out, 'jobId').valueString)
    expect(job.kind).toBe('reindex-terminology')
    expect(job.state).toBe('completed')
    expect(job.percent).toBe(100)
    expect(job.result.codeSystems).toBeGreaterThan(1000)
    expect((await s.fhirFetch(`/CodeSystem/$lookup?system=${encodeURIComponent(BODY_CS)}&code=A11`)).status).toBe(200)
    expect((await s.fhirFetch(`/CodeSystem/$lookup?system=${encodeURIComponent(GENDER_CS)}&code=male`)).status).toBe(200)
    expect(await ids(`/Patient?gender:in=${encodeURIComponent('http://example.org/fhir/ValueSet/male-only')}`)).toHaveLength(1)
  })
})

async function waitForJob(id: string): Promise<any> {
  for (let i = 0; i < 400; i++) {
    const job = await readJson(await fetch(`${s.base}/admin/jobs/${id}`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } }))
    if (['completed', 'failed', 'cancelled'].includes(job.state)) return job
    await Bun.sleep(50)
  }
  throw new Error(`job ${id} did not finish`)
}
