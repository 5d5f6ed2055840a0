// The date, number, quantity and composite handlers against a real database: resources written through
// the repository with its index hook, searched through parseSearch + runSearch. One database per file.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { loadConfig } from '../../../config'
import { createSql, ensureDatabase, type Sql } from '../../../db/client'
import { migrate } from '../../../db/migrate'
import { AppError } from '../../../errors'
import { storeVersion } from '../../interactions/store-version'
import type { Repo } from '../../repo/repo'
import { createRepo } from '../../store'
import { runSearch } from './execute'
import { parseSearch } from './parse'

const PG = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const dbName = `test_ordered_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`
const url = Object.assign(new URL(PG), { pathname: `/${dbName}` }).toString()
let sql: Sql
let repo: Repo

async function put(type: string, id: string, resource: object): Promise<void> {
  const [rid] = await repo.ids.allocate(1)
  await repo.transaction((w) => storeVersion(w, type, id, { resourceType: type, id, ...resource }, undefined, rid))
}

async function ids(type: string, query: string, sorted = true): Promise<string[]> {
  const q = parseSearch([type], new URLSearchParams(query), { defaultCount: 100, maxCount: 1000 })
  const page = await runSearch(sql, q, 'http://localhost/fhir')
  const out = page.matches.map((m) => m.id)
  return sorted ? out.sort() : out
}

async function rejected(type: string, query: string): Promise<AppError> {
  try {
    await ids(type, query)
  } catch (e) {
    return e as AppError
  }
  throw new Error(`expected ${type}?${query} to be rejected`)
}

const loinc = (code: string) => ({ coding: [{ system: 'http://loinc.org', code }] })
const ucum = (value: number, code: string, unit = code) => ({ value, unit, system: 'http://unitsofmeasure.org', code })
const DAY = 86_400_000
const day = (t: number) => new Date(t).toISOString().slice(0, 10)

beforeAll(async () => {
  await ensureDatabase(url)
  sql = createSql(url, { max: 4 })
  await migrate(sql)
  repo = await createRepo(sql, loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'error' }))

  await put('Patient', 'p1', { birthDate: '1980-05-15' })
  await put('Patient', 'p2', { birthDate: '1980-12-31' })
  await put('Patient', 'p3', { birthDate: '1981-01-01' })
  await put('Patient', 'p4', { birthDate: '1979' })
  await put('Patient', 'p5', { birthDate: '1980-05' })
  await put('Patient', 'p6', {})

  const obs = (id: string, o: object) => put('Observation', id, { status: 'final', code: loinc('x'), ...o })
  await obs('o1', { effectiveDateTime: '2020-03-04T23:30:00-05:00' })
  await obs('o2', { effectivePeriod: { start: '2020-03-01', end: '2020-03-10' } })
  await obs('o3', { effectivePeriod: { start: '2020-03-05T10:00:00Z' } })
  const now = Date.now()
  await obs('near', { code: loinc('ap'), effectiveDateTime: day(now - 20 * DAY) })
  await obs('far', { code: loinc('ap'), effectiveDateTime: day(now - 400 * DAY) })

  await put('Encounter', 'e1', { status: 'finished', class: { code: 'AMB' }, period: { start: '2021-01-01T08:00:00Z', end: '2021-01-01T17:00:00Z' } })
  await put('Encounter', 'e2', { status: 'finished', class: { code: 'IMP' }, period: { start: '2021-01-01', end: '2021-01-31' } })

  const risk = (id: string, prediction: object) =>
    put('RiskAssessment', id, { status: 'final', subject: { reference: 'Patient/p1' }, prediction: [prediction] })
  await risk('r1', { probabilityDecimal: 0.25 })
  await risk('r2', { probabilityDecimal: 0.5 })
  await risk('r3', { probabilityRange: { low: { value: 0.1 }, high: { value: 0.3 } } })
  await risk('r5', { probabilityDecimal: 100.4 })
  await risk('r6', { probabilityDecimal: 99.96 })
  await risk('r7', { probabilityDecimal: 100 })

  await obs('q1', { code: loinc('8480-6'), valueQuantity: ucum(120, 'mm[Hg]', 'mmHg') })
  await obs('q2', { code: loinc('2339-0'), valueQuantity: ucum(5.4, 'mmol/L', 'mmol/l') })
  await obs('q3', { code: loinc('29463-7'), valueQuantity: { value: 120, unit: 'kg' } })
  await obs('q4', { code: loinc('8480-6'), valueQuantity: { value: 80, system: 'http://example.org/units', code: 'mm[Hg]' } })
  await obs('q5', { code: loinc('8480-6'), valueQuantity: ucum(90, 'mm[Hg]', 'mmHg') })
  const bp = (systolic: number, diastolic: number) => ({
    code: loinc('85354-9'),
    component: [
      { code: loinc('8480-6'), valueQuantity: ucum(systolic, 'mm[Hg]') },
      { code: loinc('8462-4'), valueQuantity: ucum(diastolic, 'mm[Hg]') },
    ],
  })
  await obs('bp1', bp(130, 85))
  await obs('bp2', bp(110, 95))
  await obs('vd', { code: loinc('21112-8'), valueDateTime: '2019-06-01' })
  await obs('vs', { code: loinc('72166-2'), valueString: 'Never smoker' })
  await obs('vc', { code: loinc('72166-2'), valueCodeableConcept: { coding: [{ system: 'http://snomed.info/sct', code: '266919005' }] } })
  const usage = (id: string, value: object) =>
    put('ValueSet', id, {
      status: 'active',
      useContext: [{ code: { system: 'http://terminology.hl7.org/CodeSystem/usage-context-type', code: 'age' }, ...value }],
    })
  await usage('adults', { valueRange: { low: ucum(18, 'a'), high: ucum(65, 'a') } })
  await usage('thirty', { valueQuantity: ucum(30, 'a') })
}, 120_000) // a fresh database, migrated: far longer than 30 s under load (harness.ts)

afterAll(async () => {
  await sql?.end()
  const admin = createSql(PG, { max: 1 })
  await admin`drop database if exists ${admin(dbName)} with (force)`
  await admin.end()
})

describe('date: Patient.birthdate (date precisions)', () => {
  test('eq: the row range within the search range', async () => {
    expect(await ids('Patient', 'birthdate=1980')).toEqual(['p1', 'p2', 'p5'])
    expect(await ids('Patient', 'birthdate=eq1980')).toEqual(['p1', 'p2', 'p5'])
    expect(await ids('Patient', 'birthdate=1980-05')).toEqual(['p1', 'p5'])
    expect(await ids('Patient', 'birthdate=1980-05-15')).toEqual(['p1'])
  })

  test('ne: not within (resources without the element do not match)', async () => {
    expect(await ids('Patient', 'birthdate=ne1980')).toEqual(['p3', 'p4'])
    expect(await ids('Patient', 'birthdate=ne1980-05-15')).toEqual(['p2', 'p3', 'p4', 'p5'])
  })

  test('gt lt ge le sa eb around a year', async () => {
    expect(await ids('Patient', 'birthdate=gt1980')).toEqual(['p3'])
    expect(await ids('Patient', 'birthdate=ge1980')).toEqual(['p1', 'p2', 'p3', 'p5'])
    expect(await ids('Patient', 'birthdate=lt1980')).toEqual(['p4'])
    expect(await ids('Patient', 'birthdate=le1980')).toEqual(['p1', 'p2', 'p4', 'p5'])
    expect(await ids('Patient', 'birthdate=sa1980')).toEqual(['p3'])
    expect(await ids('Patient', 'birthdate=eb1980')).toEqual(['p4'])
  })

  test('around a day, with a month-precision row straddling it (HAPI ge/le)', async () => {
    expect(await ids('Patient', 'birthdate=gt1980-05-15')).toEqual(['p2', 'p3', 'p5'])
    expect(await ids('Patient', 'birthdate=ge1980-05-15')).toEqual(['p1', 'p2', 'p3', 'p5'])
    expect(await ids('Patient', 'birthdate=lt1980-05-15')).toEqual(['p4', 'p5'])
    expect(await ids('Patient', 'birthdate=le1980-05-15')).toEqual(['p1', 'p4', 'p5'])
    expect(await ids('Patient', 'birthdate=sa1980-05-15')).toEqual(['p2', 'p3'])
    expect(await ids('Patient', 'birthdate=eb1980-05-15')).toEqual(['p4'])
  })

  test('AND across repeats, OR within commas', async () => {
    expect(await ids('Patient', 'birthdate=ge1980-05&birthdate=lt1981')).toEqual(['p1', 'p2', 'p5'])
    expect(await ids('Patient', 'birthdate=1979,1981')).toEqual(['p3', 'p4'])
  })

  test(':missing', async () => {
    expect(await ids('Patient', 'birthdate:missing=true')).toEqual(['p6'])
    expect(await ids('Patient', 'birthdate:missing=false')).toEqual(['p1', 'p2', 'p3', 'p4', 'p5'])
  })

  test('_sort=birthdate ascending by the earliest instant, descending by the latest, missing last', async () => {
    expect(await ids('Patient', '_sort=birthdate', false)).toEqual(['p4', 'p5', 'p1', 'p2', 'p3', 'p6'])
    expect(await ids('Patient', '_sort=-birthdate', false)).toEqual(['p3', 'p2', 'p5', 'p1', 'p4', 'p6'])
  })

  test('bad values are 400', async () => {
    for (const bad of ['xx1980', '1980-13', 'gt', 'yesterday']) expect((await rejected('Patient', `birthdate=${bad}`)).status).toBe(400)
  })
})

describe('date: Observation.date (dateTime with zone, Period, open Period)', () => {
  const o = (q: string) => ids('Observation', `code=http://loinc.org|x&${q}`)

  test('a zoned dateTime: its day as written at day precision (the zone not considered), its instant with a time', async () => {
    // 2020-03-04T23:30:00-05:00 is the 5th in UTC: R4 and HAPI compare the calendar date as written
    expect(await o('date=2020-03-04')).toEqual(['o1'])
    expect(await o('date=2020-03-05')).toEqual([])
    expect(await o('date=eb2020-03-05')).toEqual(['o1'])
    expect(await o('date=2020-03-04T23:30:00-05:00')).toEqual(['o1'])
    // `+01:00` not percent-encoded: the query string turns it into a space
    expect(await ids('Observation', 'code=x&date=2020-03-05T05:30:00+01:00')).toEqual(['o1'])
    expect(await o('date=2020-03-05T05:30:00%2B01:00')).toEqual(['o1'])
    expect(await o('date=gt2020-03-05T05:30:00%2B01:00')).toEqual(['o2', 'o3'])
  })

  test('Periods by prefix', async () => {
    expect(await o('date=2020-03')).toEqual(['o1', 'o2'])
    expect(await o('date=ne2020-03')).toEqual(['o3'])
    expect(await o('date=gt2020-03-31')).toEqual(['o3'])
    expect(await o('date=lt2020-03-02')).toEqual(['o2'])
    expect(await o('date=ge2020-03-06')).toEqual(['o2', 'o3'])
    expect(await o('date=le2020-03-04')).toEqual(['o1', 'o2'])
    expect(await o('date=le2020-03-03')).toEqual(['o2'])
    expect(await o('date=sa2020-03-04')).toEqual(['o3'])
    expect(await o('date=sa2020-03-03')).toEqual(['o1', 'o3'])
    expect(await o('date=eb2020-03-11')).toEqual(['o1', 'o2'])
    expect(await o('date=ge2020-03-04&date=lt2020-03-05T06:00Z')).toEqual(['o1', 'o2'])
    expect(await o('date=ge2020-03-05&date=lt2020-03-05T06:00Z')).toEqual(['o2'])
    expect(await o('date=2020-03-04,gt2021')).toEqual(['o1', 'o3'])
  })

  test('ap: within 10% of the gap to now', async () => {
    const now = Date.now()
    const ap = (t: number) => ids('Observation', `code=http://loinc.org|ap&date=ap${day(t)}`)
    expect(await ap(now - 21 * DAY)).toEqual(['near'])
    expect(await ap(now - 30 * DAY)).toEqual([])
    expect(await ap(now - 420 * DAY)).toEqual(['far'])
  })

  test('_sort=date and -date', async () => {
    expect(await ids('Observation', 'code=http://loinc.org|x&_sort=date', false)).toEqual(['o2', 'o1', 'o3'])
    expect(await ids('Observation', 'code=http://loinc.org|x&_sort=-date', false)).toEqual(['o3', 'o2', 'o1'])
  })
})

describe('date: Encounter.date (Period)', () => {
  test('by prefix', async () => {
    expect(await ids('Encounter', 'date=2021-01-01')).toEqual(['e1'])
    expect(await ids('Encounter', 'date=2021-01')).toEqual(['e1', 'e2'])
    expect(await ids('Encounter', 'date=gt2021-01-01')).toEqual(['e2'])
    expect(await ids('Encounter', 'date=eb2021-01-02')).toEqual(['e1'])
    expect(await ids('Encounter', 'date=sa2020-12-31')).toEqual(['e1', 'e2'])
    expect(await ids('Encounter', 'date=le2021-01-01T08:00Z')).toEqual(['e1', 'e2'])
    expect(await ids('Encounter', 'date=lt2021-01-01T08:00Z')).toEqual(['e2'])
  })
})

describe('_lastUpdated', () => {
  test('gt and lt around a write', async () => {
    await put('Device', 'd1', {})
    await Bun.sleep(20)
    const between = new Date().toISOString()
    await Bun.sleep(20)
    await put('Device', 'd2', {})
    expect(await ids('Device', `_lastUpdated=gt${between}`)).toEqual(['d2'])
    expect(await ids('Device', `_lastUpdated=lt${between}`)).toEqual(['d1'])
    expect(await ids('Device', `_lastUpdated=ge${between.slice(0, 10)}`)).toEqual(['d1', 'd2'])
    expect(await ids('Device', `_lastUpdated=${between.slice(0, 4)}`)).toEqual(['d1', 'd2'])
    expect(await ids('Device', `_lastUpdated=eb${between}`)).toEqual(['d1'])
    expect(await ids('Device', '_lastUpdated=lt2000')).toEqual([])
    expect((await rejected('Device', '_lastUpdated=xx2020')).status).toBe(400)
  })
})

describe('number: RiskAssessment.probability (decimals and a Range)', () => {
  const r = (q: string) => ids('RiskAssessment', q)

  test('eq uses the search value precision', async () => {
    expect(await r('probability=100')).toEqual(['r5', 'r6', 'r7'])
    expect(await r('probability=100.0')).toEqual(['r6', 'r7'])
    expect(await r('probability=1e2')).toEqual(['r5', 'r6', 'r7'])
    expect(await r('probability=0.25')).toEqual(['r1'])
    expect(await r('probability=0.2')).toEqual([])
    expect(await r('probability=ne100')).toEqual(['r1', 'r2', 'r3'])
  })

  test('comparisons on the exact value; a Range by its ends', async () => {
    expect(await r('probability=gt100')).toEqual(['r5'])
    expect(await r('probability=ge100')).toEqual(['r5', 'r7'])
    expect(await r('probability=lt100')).toEqual(['r1', 'r2', 'r3', 'r6'])
    expect(await r('probability=le0.25')).toEqual(['r1', 'r3'])
    expect(await r('probability=gt0.25&probability=lt1')).toEqual(['r2', 'r3'])
    expect(await r('probability=sa0.2&probability=lt1')).toEqual(['r1', 'r2'])
    expect(await r('probability=eb0.3')).toEqual(['r1'])
    expect(await r('probability=ap100')).toEqual(['r5', 'r6', 'r7'])
    expect(await r('probability=ap0.5')).toEqual(['r2'])
  })

  test('_sort=probability', async () => {
    expect(await r('_sort=probability')).toEqual(['r1', 'r2', 'r3', 'r5', 'r6', 'r7'])
    expect(await ids('RiskAssessment', '_sort=probability', false)).toEqual(['r3', 'r1', 'r2', 'r6', 'r7', 'r5'])
    expect(await ids('RiskAssessment', '_sort=-probability', false)).toEqual(['r5', 'r7', 'r6', 'r2', 'r3', 'r1'])
  })

  test('a bad prefix is HAPI-1235, a bad number 400', async () => {
    const e = await rejected('RiskAssessment', 'probability=xx5')
    expect(e.status).toBe(400)
    expect(e.message).toStartWith('HAPI-1235: ')
    expect((await rejected('RiskAssessment', 'probability=abc')).status).toBe(400)
  })
})

describe('quantity: Observation.value-quantity', () => {
  const q = (v: string) => ids('Observation', `value-quantity=${encodeURIComponent(v)}`)

  test('value alone, any unit', async () => {
    expect(await q('120')).toEqual(['q1', 'q3'])
    expect(await q('le5.4')).toEqual(['q2'])
    expect(await q('ap5')).toEqual(['q2'])
    expect(await q('sa100')).toEqual(['q1', 'q3'])
    expect(await q('eb100')).toEqual(['q2', 'q4', 'q5'])
    expect(await q('ne120')).toEqual(['q2', 'q4', 'q5'])
  })

  test('system and code; code alone matches the code or the unit', async () => {
    expect(await q('120|http://unitsofmeasure.org|mm[Hg]')).toEqual(['q1'])
    expect(await q('gt100|http://unitsofmeasure.org|mm[Hg]')).toEqual(['q1'])
    expect(await q('lt100|http://unitsofmeasure.org|mm[Hg]')).toEqual(['q5'])
    expect(await q('lt100||mm[Hg]')).toEqual(['q4', 'q5'])
    expect(await q('120||mmHg')).toEqual(['q1'])
    expect(await q('120||kg')).toEqual(['q3'])
    expect(await q('5.4|http://unitsofmeasure.org')).toEqual(['q2'])
    expect(await q('5.4|http://unitsofmeasure.org|')).toEqual(['q2'])
    expect(await q('120|http://example.org/units|mm[Hg]')).toEqual([])
  })

  test('bad values are 400', async () => {
    expect((await rejected('Observation', 'value-quantity=xx5')).message).toStartWith('HAPI-1235: ')
    for (const bad of ['abc', '|http://unitsofmeasure.org|mg', '1|a|b|c'])
      expect((await rejected('Observation', `value-quantity=${encodeURIComponent(bad)}`)).status).toBe(400)
  })
})

describe('composite', () => {
  const c = (param: string, v: string) => ids('Observation', `${param}=${encodeURIComponent(v)}`)

  test('code-value-quantity: the code and the value of the same Observation', async () => {
    expect(await c('code-value-quantity', 'http://loinc.org|8480-6$gt100')).toEqual(['q1'])
    expect(await c('code-value-quantity', 'http://loinc.org|8480-6$lt100')).toEqual(['q4', 'q5'])
    expect(await c('code-value-quantity', 'http://loinc.org|8480-6$lt100|http://unitsofmeasure.org|mm[Hg]')).toEqual(['q5'])
    expect(await c('code-value-quantity', '8480-6$120')).toEqual(['q1'])
    expect(await c('code-value-quantity', 'http://loinc.org|8480-6$120.0')).toEqual(['q1'])
    expect(await c('code-value-quantity', 'http://loinc.org|8480-6$ge120||mm[Hg]')).toEqual(['q1'])
    expect(await c('code-value-quantity', 'http://loinc.org|8480-6$ap95')).toEqual(['q5'])
    expect(await c('code-value-quantity', 'http://loinc.org|8480-6$ap88')).toEqual(['q4', 'q5'])
    expect(await c('code-value-quantity', 'http://loinc.org|2339-0$5.4')).toEqual(['q2'])
    expect(await c('code-value-quantity', 'http://loinc.org|2339-0$5.5')).toEqual([])
    expect(await c('code-value-quantity', 'http://loinc.org|8480-6$gt100,http://loinc.org|2339-0$lt10')).toEqual(['q1', 'q2'])
  })

  test('component-code-value-quantity: the code and the value of the same component', async () => {
    expect(await c('component-code-value-quantity', 'http://loinc.org|8480-6$gt120')).toEqual(['bp1'])
    expect(await c('component-code-value-quantity', 'http://loinc.org|8462-4$gt90')).toEqual(['bp2'])
    expect(await c('component-code-value-quantity', 'http://loinc.org|8462-4$gt100')).toEqual([])
    expect(await c('component-code-value-quantity', 'http://loinc.org|8480-6$ge110')).toEqual(['bp1', 'bp2'])
  })

  test('token with a date, a string, a concept', async () => {
    expect(await c('code-value-date', 'http://loinc.org|21112-8$ge2019')).toEqual(['vd'])
    expect(await c('code-value-date', 'http://loinc.org|21112-8$2019-06')).toEqual(['vd'])
    expect(await c('code-value-date', 'http://loinc.org|21112-8$gt2019-06-01')).toEqual([])
    expect(await c('code-value-string', 'http://loinc.org|72166-2$never')).toEqual(['vs'])
    expect(await c('code-value-string', 'http://loinc.org|72166-2$smoker')).toEqual([])
    expect(await c('code-value-concept', 'http://loinc.org|72166-2$http://snomed.info/sct|266919005')).toEqual(['vc'])
    expect(await c('code-value-concept', '72166-2$266919005')).toEqual(['vc'])
    expect(await c('code-value-concept', 'http://loinc.org|72166-2$http://loinc.org|266919005')).toEqual([])
    expect(await c('code-value-concept', '|72166-2$266919005')).toEqual([])
    expect(await c('combo-code-value-quantity', 'http://loinc.org|8462-4$gt90')).toEqual(['bp2'])
  })

  test('context-type-quantity: a Range compares by its ends, a Quantity by its value', async () => {
    const v = (q: string) => ids('ValueSet', `context-type-quantity=${encodeURIComponent(q)}`)
    expect(await v('age$gt60')).toEqual(['adults'])
    expect(await v('age$gt70')).toEqual([])
    expect(await v('age$lt18')).toEqual([])
    expect(await v('age$le18')).toEqual(['adults'])
    expect(await v('age$lt31')).toEqual(['adults', 'thirty'])
    expect(await v('age$30')).toEqual(['thirty'])
    expect(await v('age$40')).toEqual([])
    expect(await v('age$ne30')).toEqual(['adults'])
    expect(await v('age$30|http://unitsofmeasure.org|a')).toEqual(['thirty'])
  })

  test('more than two parts is HAPI-1224; one part, a bad prefix are 400', async () => {
    const e = await rejected('Observation', `code-value-quantity=${encodeURIComponent('http://loinc.org|8480-6$gt100$x')}`)
    expect(e.status).toBe(400)
    expect(e.message).toStartWith('HAPI-1224: ')
    expect((await rejected('Observation', 'code-value-quantity=8480-6')).status).toBe(400)
    expect((await rejected('Observation', `code-value-quantity=${encodeURIComponent('8480-6$xx1')}`)).message).toStartWith('HAPI-1235: ')
    expect((await rejected('Observation', `code-value-date=${encodeURIComponent('21112-8$2019-13')}`)).status).toBe(400)
  })

  test('a parameter of three components is HAPI-1224', async () => {
    const e = await rejected('MolecularSequence', `chromosome-variant-coordinate=${encodeURIComponent('1$gt10$lt20')}`)
    expect(e.status).toBe(400)
    expect(e.message).toStartWith('HAPI-1224: ')
  })
})
