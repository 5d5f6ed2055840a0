// Large transactions: more than 100 versions are written in several statements of one database
// transaction, each sent as soon as it is built. References may point at a later statement's resources,
// and a failure in the last statement still leaves nothing written.
import { describe, expect, test } from 'bun:test'
import { useTestServer } from './harness'
import { commit, observation, patient, post, read, rejected, transaction, unique, uuid, withIdentifier } from './bundle-http'

describe('transaction written in several statements', () => {
  const s = useTestServer()

  test('a large bundle: the first entries reference the last one, written in another statement', async () => {
    const p = uuid()
    const v = unique('aon-large')
    const body = await commit(s, [...Array.from({ length: 450 }, () => post(observation(p))), post(patient(v), p)])
    expect(body.entry).toHaveLength(451)
    const [patientId] = await withIdentifier(s, 'Patient', v)
    expect(body.entry[0].response.status).toBe('201 Created')
    expect((await read(s, body.entry[0].response.location.replace(/\/_history\/\d+$/, ''))).subject.reference).toBe(`Patient/${patientId}`)
  })

  test('a large bundle failing in its last statement: 400 naming the entry, nothing written', async () => {
    const p = uuid()
    const v = unique('aon-large-fail')
    const entries = [post(patient(v), p), ...Array.from({ length: 449 }, () => post(observation(p))), post(observation('Patient/no-such-patient-x3'))]
    const text = await rejected(s, transaction(entries), 400, 450)
    expect(text).toContain('HAPI-1094')
    expect(await withIdentifier(s, 'Patient', v)).toEqual([])
  })
})
