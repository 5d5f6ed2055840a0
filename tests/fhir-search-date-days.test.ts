// Dates of day, month or year precision compare with the calendar date as written in the resource,
// its time zone not considered, as R4 says ("time zones should not be considered",
// https://hl7.org/fhir/R4/search.html#date) and HAPI does (DatePredicateBuilder on its ordinal dates,
// ResourceIndexedSearchParamDate): `created=2012-02-12` finds `2012-02-12T00:49:45+01:00`, which is the
// 11th in UTC. A search value with a time still compares instants. Rows indexed before migration 0020
// answer as before until the reindexing pass the migration queues rewrites them.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, test } from 'bun:test'
import { createResource, readJson, useTestServer } from './harness'
import { matchKeysOf } from './search-expect'

const s = useTestServer()
const ids: Record<string, string> = {}

const obs = async (name: string, effective: Record<string, unknown>) => {
  const r = await createResource(s, { resourceType: 'Observation', status: 'final', code: { coding: [{ system: 'urn:test', code: 'days' }] }, ...effective })
  ids[name] = `Observation/${r.id}`
}

beforeAll(async () => {
  await obs('lateNight', { effectiveDateTime: '2012-02-12T00:49:45+01:00' }) // 2012-02-11T23:49:45Z
  await obs('evening', { effectiveDateTime: '2012-03-01T23:30:00-05:00' }) // 2012-03-02T04:30:00Z
  await obs('utc', { effectiveDateTime: '2012-02-12T12:00:00Z' })
  await obs('period', { effectivePeriod: { start: '2012-02-13T00:30:00+02:00', end: '2012-02-13T01:00:00+02:00' } }) // the 12th in UTC
})

const found = async (q: string) => (await matchKeysOf(s, `/Observation?code=urn:test|days&${q}`)).sort()
const named = (...names: string[]) => names.map((n) => ids[n]).sort()

describe('day, month and year precision: the calendar date as written', () => {
  test('eq at day, month and year precision', async () => {
    expect(await found('date=2012-02-12')).toEqual(named('lateNight', 'utc'))
    expect(await found('date=2012-02-11')).toEqual([])
    expect(await found('date=2012-03-01')).toEqual(named('evening'))
    expect(await found('date=2012-03-02')).toEqual([])
    expect(await found('date=2012-02-13')).toEqual(named('period'))
    expect(await found('date=2012-02')).toEqual(named('lateNight', 'utc', 'period'))
    expect(await found('date=2012')).toEqual(named('lateNight', 'evening', 'utc', 'period'))
  })

  test('every prefix', async () => {
    expect(await found('date=gt2012-02-12')).toEqual(named('evening', 'period'))
    expect(await found('date=ge2012-02-12')).toEqual(named('lateNight', 'evening', 'utc', 'period'))
    expect(await found('date=lt2012-02-13')).toEqual(named('lateNight', 'utc'))
    expect(await found('date=le2012-02-12')).toEqual(named('lateNight', 'utc'))
    expect(await found('date=sa2012-02-12')).toEqual(named('evening', 'period'))
    expect(await found('date=eb2012-02-13')).toEqual(named('lateNight', 'utc'))
    expect(await found('date=ne2012-02-12')).toEqual(named('evening', 'period'))
    expect(await found('date=lt2012-03')).toEqual(named('lateNight', 'utc', 'period'))
    expect(await found('date=ge2012-03')).toEqual(named('evening'))
  })

  test('a value with a time compares instants', async () => {
    expect(await found('date=2012-02-11T23:49:45Z')).toEqual(named('lateNight'))
    expect(await found('date=2012-02-12T00:49:45%2B01:00')).toEqual(named('lateNight'))
    expect(await found('date=lt2012-02-12T00:00:00Z')).toEqual(named('lateNight'))
    expect(await found('date=gt2012-03-02T00:00:00Z')).toEqual(named('evening'))
  })
})

describe('values at the ends of the calendar', () => {
  // Their bounds widened past year 1 or 9999 were bound as '-infinity'/'infinity' strings, which the
  // client's timestamptz serializer turned into an Invalid Date: a 500 for each of these.
  test('the first and last years answer; year 0000 (not a FHIR date) is a 400', async () => {
    const ok = async (q: string) => {
      const res = await s.fhirFetch(`/Observation?code=urn:test|days&${q}`)
      expect(`${q} ${res.status}`).toBe(`${q} 200`)
      return (await readJson(res)).entry?.length ?? 0
    }
    expect(await ok('date=lt0001-01-01')).toBe(0)
    expect(await ok('date=ge0001')).toBe(4)
    expect(await ok('date=9999-12-31')).toBe(0)
    expect(await ok('date=le9999-12-31')).toBe(4)
    expect(await ok('date=ap0001')).toBe(0)
    expect(await ok('date=gt9999-12-31T23:59:59Z')).toBe(0)
    expect(await ok('_lastUpdated=lt0001-01-01')).toBe(0)
    expect(await ok('_lastUpdated=le9999-12-31')).toBe(4)
    for (const q of ['date=0000-01-01', '_lastUpdated=gt0000-01-01', 'date=gt0000']) {
      const res = await s.fhirFetch(`/Observation?code=urn:test|days&${q}`)
      expect(`${q} ${res.status}`).toBe(`${q} 400`)
      expect((await readJson(res)).resourceType).toBe('OperationOutcome')
    }
  })
})

describe('rows indexed before migration 0020', () => {
  // The data statements of the migration itself (its DDL has run): what an existing database gets.
  const migration = readFileSync(join(import.meta.dir, '..', 'sql', 'migrations', '0020_date_days.sql'), 'utf8')
  const statements = migration
    .split(';')
    .map((st) => st.replace(/--[^\n]*\n/g, '').trim())
    .filter((st) => /^(update|insert)/.test(st))

  test('answer by their days in UTC, as before, until the reindexing pass writes the days as written', async () => {
    expect(statements.length).toBe(2)
    // The scheduled pass (every 10 s) waits while this session holds its lock (repo/reindex-pass.ts).
    const held = await s.sql.reserve()
    try {
      await held`select pg_advisory_lock(${0x7265_696e})`
      for (const st of statements) await s.sql.unsafe(st)
      const [{ n }] = await s.sql<{ n: number }[]>`select count(*)::int as n from reindex_pending`
      expect(n).toBeGreaterThanOrEqual(4)
      expect(await found('date=2012-02-11')).toEqual(named('lateNight'))
      expect(await found('date=2012-03-02')).toEqual(named('evening'))
    } finally {
      await held`select pg_advisory_unlock(${0x7265_696e})`
      held.release()
    }
    const res = await s.fhirFetch('/$perform-reindexing-pass', { method: 'POST', json: { resourceType: 'Parameters' } })
    expect(res.status).toBe(200)
    expect(await found('date=2012-02-11')).toEqual([])
    expect(await found('date=2012-02-12')).toEqual(named('lateNight', 'utc'))
    expect(await found('date=2012-03-01')).toEqual(named('evening'))
  })
})
