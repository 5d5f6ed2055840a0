// _filter: the parser (precedence, parentheses, not, quoting, errors), name and operator resolution, and
// searches against a fresh PostgreSQL database. https://hl7.org/fhir/R4/search_filter.html
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { loadConfig } from '../../../config'
import { createSql, ensureDatabase, type Sql } from '../../../db/client'
import { migrate } from '../../../db/migrate'
import { AppError } from '../../../errors'
import { storeVersion } from '../../interactions/store-version'
import { createRepo } from '../../store'
import { runSearch } from './execute'
import { comparisonPredicate, type FilterExpr, filterCriterion, parseFilter } from './filter'
import { handlerFor } from '../types'
import type { ParamHandler } from '../types/param-type'
import { parseSearch } from './parse'
import { type SearchParamDef, searchParamFor } from '../registry'

const c = (param: string, op: string, value: string): FilterExpr => ({ kind: 'compare', param, op: op as any, value })

function errorOf(fn: () => unknown): AppError {
  try {
    fn()
  } catch (e) {
    expect(e).toBeInstanceOf(AppError)
    return e as AppError
  }
  throw new Error('expected an error')
}

describe('parseFilter', () => {
  test('a comparison; every supported operator', () => {
    expect(parseFilter('name eq smith')).toEqual(c('name', 'eq', 'smith'))
    for (const op of ['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'lt', 'ge', 'le', 'sa', 'eb', 'ap']) expect(parseFilter(`x ${op} 1`)).toEqual(c('x', op, '1'))
  })

  test('and binds tighter than or; chains flatten', () => {
    expect(parseFilter('a eq 1 or b eq 2 and c eq 3')).toEqual({
      kind: 'or',
      any: [c('a', 'eq', '1'), { kind: 'and', all: [c('b', 'eq', '2'), c('c', 'eq', '3')] }],
    })
    expect(parseFilter('a eq 1 and b eq 2 or c eq 3')).toEqual({
      kind: 'or',
      any: [{ kind: 'and', all: [c('a', 'eq', '1'), c('b', 'eq', '2')] }, c('c', 'eq', '3')],
    })
    expect(parseFilter('a eq 1 and b eq 2 and c eq 3')).toEqual({ kind: 'and', all: [c('a', 'eq', '1'), c('b', 'eq', '2'), c('c', 'eq', '3')] })
  })

  test('parentheses group, with or without spaces', () => {
    const expected: FilterExpr = { kind: 'and', all: [{ kind: 'or', any: [c('a', 'eq', '1'), c('b', 'eq', '2')] }, c('c', 'eq', '3')] }
    expect(parseFilter('(a eq 1 or b eq 2) and c eq 3')).toEqual(expected)
    expect(parseFilter('( a eq 1 or b eq 2 )and(c eq 3)')).toEqual(expected)
    expect(parseFilter('((a eq 1))')).toEqual(c('a', 'eq', '1'))
  })

  test('not(...) negates a group', () => {
    expect(parseFilter('not(a eq 1)')).toEqual({ kind: 'not', inner: c('a', 'eq', '1') })
    expect(parseFilter('not (a eq 1 or b eq 2) and c eq 3')).toEqual({
      kind: 'and',
      all: [{ kind: 'not', inner: { kind: 'or', any: [c('a', 'eq', '1'), c('b', 'eq', '2')] } }, c('c', 'eq', '3')],
    })
    expect(parseFilter('a eq 1 or not(not(b eq 2))')).toEqual({
      kind: 'or',
      any: [c('a', 'eq', '1'), { kind: 'not', inner: { kind: 'not', inner: c('b', 'eq', '2') } }],
    })
  })

  test('quoted values: JSON escapes, spaces, parentheses and keywords inside', () => {
    expect(parseFilter('name eq "van der Berg"')).toEqual(c('name', 'eq', 'van der Berg'))
    expect(parseFilter('name eq "a \\"b\\" \\\\ \\/ \\t \\u00e9"')).toEqual(c('name', 'eq', 'a "b" \\ / \t é'))
    expect(parseFilter('name eq "x) or (y"')).toEqual(c('name', 'eq', 'x) or (y'))
    expect(parseFilter('name eq"x"and b eq 1')).toEqual({ kind: 'and', all: [c('name', 'eq', 'x'), c('b', 'eq', '1')] })
  })

  test('unquoted values run to whitespace, ")" or "]"', () => {
    expect(parseFilter('identifier eq http://x|1')).toEqual(c('identifier', 'eq', 'http://x|1'))
    expect(parseFilter('birthdate ge 2020-01-01T00:00:00+01:00')).toEqual(c('birthdate', 'ge', '2020-01-01T00:00:00+01:00'))
    expect(parseFilter('(gender eq female)')).toEqual(c('gender', 'eq', 'female'))
    expect(parseFilter('value-quantity gt 5.4|http://unitsofmeasure.org|mg')).toEqual(c('value-quantity', 'gt', '5.4|http://unitsofmeasure.org|mg'))
  })

  test.each([
    ['name eq smith))', 'HAPI-1056: Expression did not terminate at 13'],
    ['(name eq smith', "HAPI-1057: Expected ')' at 14 but found [end!]"],
    ['name xx smith', 'HAPI-1064: Unknown operation xx at 7'],
    ['name eq smith foo eq 1', 'HAPI-1059: Unexpected Name foo at 17'],
    ['%name eq x', 'HAPI-1052: Unknown Character "%" at 0'],
    ['name eq "\\q"', 'HAPI-1053: Unknown escape sequence at 10'],
    ['name eq "abc', 'HAPI-1054: Problem with string termination at 12'],
    ['name eq ""', 'HAPI-1055: Problem with string at 9 cannot be empty'],
    ['name eq', 'Unexpected end of expression at 7'],
    ['name eq smith and', 'Unexpected end of expression at 17'],
    ['name eq )', 'HAPI-1065: Unexpected Character ) at 8'],
    ['not name eq x', "Expected '(' after not at 4 but found n"],
    ['()', 'HAPI-1058: Unexpected Character ) at 1'],
    [`${'('.repeat(40)}a eq 1${')'.repeat(40)}`, 'Parentheses nested deeper than 32'],
  ])('syntax error: %s', (text, message) => {
    const e = errorOf(() => parseFilter(text))
    expect(e.category).toBe('invalid')
    expect(e.message).toStartWith('HAPI-1221: Error parsing _filter syntax: ')
    expect(e.message).toContain(message)
  })

  test('parameter paths and the unsupported operators of the specification: 400, not syntax errors', () => {
    for (const text of ['subject.name co pet', 'related[type eq has-component].target pr true', 'name pr true', 'code in http://x/vs', 'a re Patient/1']) {
      const e = errorOf(() => parseFilter(text))
      expect(e.category).toBe('invalid')
      expect(e.message).not.toContain('HAPI-1221')
    }
  })
})

describe('filterCriterion', () => {
  const def = (type: string, code: string) => searchParamFor(type, code) as SearchParamDef

  test('comparisons become compare criteria; and, or, not keep their shape', () => {
    const cr = filterCriterion(['Patient'], '(family eq Smith or family eq Jones) and not(gender eq male)')
    expect(cr).toEqual({
      kind: 'and',
      all: [
        {
          kind: 'or',
          any: [
            { kind: 'compare', def: def('Patient', 'family'), op: 'eq', value: 'Smith' },
            { kind: 'compare', def: def('Patient', 'family'), op: 'eq', value: 'Jones' },
          ],
        },
        { kind: 'not', inner: { kind: 'compare', def: def('Patient', 'gender'), op: 'eq', value: 'male' } },
      ],
    })
  })

  test('_id and _lastUpdated become their ordinary criteria', () => {
    expect(filterCriterion(['Patient'], '_id eq a1')).toEqual({ kind: 'param', def: def('Patient', '_id'), values: ['a1'] })
    expect(filterCriterion(['Patient'], '_id ne a1')).toEqual({ kind: 'param', def: def('Patient', '_id'), modifier: 'not', values: ['a1'] })
    expect(filterCriterion(['Patient'], '_lastUpdated ge 2020-01-01')).toEqual({ kind: 'param', def: def('Patient', '_lastUpdated'), values: ['ge2020-01-01'] })
  })

  test('blank filters are ignored', () => {
    expect(filterCriterion(['Patient'], '')).toBeUndefined()
    expect(filterCriterion(['Patient'], '   ')).toBeUndefined()
  })

  test('unknown parameter names: 400 HAPI-1206 listing the valid ones', () => {
    const e = errorOf(() => filterCriterion(['Patient'], 'gender eq male or shoe-size gt 40'))
    expect(e.category).toBe('invalid')
    expect(e.message).toStartWith('HAPI-1206: Unknown search parameter "shoe-size" for resource type "Patient"')
    expect(e.message).toContain('birthdate')
    expect(errorOf(() => filterCriterion(['Patient'], 'name:exact eq x')).message).toStartWith('HAPI-1206')
    // a system search needs the parameter on every type
    expect(errorOf(() => filterCriterion(['Patient', 'Observation'], 'gender eq male')).message).toStartWith('HAPI-1206')
  })

  test.each([
    ['Patient', 'gender co fem'],
    ['Patient', 'identifier gt 5'],
    ['Patient', 'name sa x'],
    ['Patient', 'birthdate sw 2020'],
    ['Patient', '_id sw a'],
    ['Patient', '_lastUpdated co 2020'],
    ['Patient', '_text eq x'],
    ['Patient', '_has eq x'],
    ['Observation', 'code-value-quantity eq x'],
    ['Observation', 'subject sw Patient'],
  ])('operators that make no sense for the type: 400 (%s %s)', (type, text) => {
    const e = errorOf(() => filterCriterion([type], text))
    expect(e.category).toBe('invalid')
    expect(e.message).not.toContain('HAPI-1221')
  })

  test('HAPI messages for composite and reference', () => {
    expect(errorOf(() => filterCriterion(['Observation'], 'code-value-quantity eq x')).message).toStartWith('HAPI-1207')
    expect(errorOf(() => filterCriterion(['Observation'], 'subject co 1')).message).toStartWith('HAPI-1212')
  })

  test('parseSearch routes _filter, even inside _has; unknown names are 400 even with handling=lenient', () => {
    const opts = { defaultCount: 10, maxCount: 10 }
    expect(parseSearch(['Patient'], new URLSearchParams({ _filter: 'gender eq male' }), opts).criteria).toEqual([
      { kind: 'compare', def: def('Patient', 'gender'), op: 'eq', value: 'male' },
    ])
    expect(parseSearch(['Patient'], new URLSearchParams({ _filter: '' }), opts).criteria).toEqual([])
    expect(parseSearch(['Patient'], new URLSearchParams({ '_has:Observation:subject:_filter': 'status eq final' }), opts).criteria[0]).toMatchObject({
      kind: 'has',
      inner: { kind: 'compare', op: 'eq', value: 'final' },
    })
    expect(errorOf(() => parseSearch(['Patient'], new URLSearchParams({ _filter: 'foo eq 1' }), { ...opts, lenient: true })).message).toStartWith('HAPI-1206')
  })
})

describe('comparisonPredicate', () => {
  test('date, number and quantity hand the operator to their handler as the value prefix', () => {
    const seen: string[] = []
    const fake: ParamHandler = { table: 'idx_x', modifiers: new Set(), predicate: (_sql, value) => (seen.push(value), undefined as any) }
    for (const [type, code] of [
      ['Patient', 'birthdate'],
      ['RiskAssessment', 'probability'],
      ['Observation', 'value-quantity'],
    ] as const) {
      const def = searchParamFor(type, code) as SearchParamDef
      comparisonPredicate(undefined as unknown as Sql, fake, 'ge', '2020', { def, resType: type, baseUrl: '' })
      comparisonPredicate(undefined as unknown as Sql, fake, 'ap', '5.4|http://unitsofmeasure.org|mg', { def, resType: type, baseUrl: '' })
    }
    expect(seen).toEqual([
      'ge2020',
      'ap5.4|http://unitsofmeasure.org|mg',
      'ge2020',
      'ap5.4|http://unitsofmeasure.org|mg',
      'ge2020',
      'ap5.4|http://unitsofmeasure.org|mg',
    ])
  })
})

// ---- against PostgreSQL ----

const PG = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const DB = `test_filter_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`
const BASE = 'http://localhost:8080/fhir'
let sql: Sql

const RESOURCES: any[] = [
  {
    resourceType: 'Patient',
    id: 'p1',
    name: [{ family: 'Smith', given: ['John'] }],
    gender: 'male',
    birthDate: '1980-05-01',
    identifier: [
      { system: 'http://x', value: '1' },
      { system: 'http://y', value: '9' },
    ],
  },
  {
    resourceType: 'Patient',
    id: 'p2',
    name: [{ family: 'Smithson', given: ['Jane'] }],
    gender: 'female',
    birthDate: '1990-01-01',
    identifier: [{ system: 'http://x', value: '2' }],
  },
  {
    resourceType: 'Patient',
    id: 'p3',
    name: [{ family: 'Jones', given: ['Anna'] }],
    gender: 'female',
    birthDate: '2001-07-04',
    identifier: [{ system: 'http://y', value: '1' }],
  },
  { resourceType: 'Patient', id: 'p4', name: [{ family: 'Müller', given: ['Ëlse'] }] },
  {
    resourceType: 'Observation',
    id: 'o1',
    status: 'final',
    code: { text: 'x' },
    subject: { reference: 'Patient/p1' },
    valueQuantity: { value: 5.4, system: 'http://unitsofmeasure.org', code: 'mg' },
  },
  {
    resourceType: 'Observation',
    id: 'o2',
    status: 'preliminary',
    code: { text: 'x' },
    subject: { reference: 'Patient/p2' },
    valueQuantity: { value: 10, system: 'http://unitsofmeasure.org', code: 'mg' },
  },
  { resourceType: 'Observation', id: 'o3', status: 'final', code: { text: 'x' } },
  { resourceType: 'ValueSet', id: 'vs1', status: 'active', url: 'http://example.org/fhir/ValueSet/alpha' },
  { resourceType: 'ValueSet', id: 'vs2', status: 'active', url: 'http://example.org/other/beta' },
  { resourceType: 'RiskAssessment', id: 'ra1', status: 'final', subject: { reference: 'Patient/p1' }, prediction: [{ probabilityDecimal: 0.8 }] },
  { resourceType: 'RiskAssessment', id: 'ra2', status: 'final', subject: { reference: 'Patient/p2' }, prediction: [{ probabilityDecimal: 0.2 }] },
]

beforeAll(async () => {
  const u = new URL(PG)
  u.pathname = `/${DB}`
  await ensureDatabase(u.toString())
  sql = createSql(u.toString(), { max: 2 })
  await migrate(sql)
  const repo = await createRepo(sql, loadConfig({ DATABASE_URL: u.toString() }))
  const rids = await repo.ids.allocate(RESOURCES.length)
  await repo.transaction(async (w) => {
    for (const [n, r] of RESOURCES.entries()) await storeVersion(w, r.resourceType, r.id, r, undefined, rids[n])
  })
}, 120_000) // a fresh database, migrated: far longer than 30 s under load (harness.ts)

afterAll(async () => {
  await sql?.end()
  const admin = createSql(PG, { max: 1 })
  await admin`drop database if exists ${admin(DB)} with (force)`
  await admin.end()
})

async function ids(types: string | string[], query: string): Promise<string[]> {
  const q = parseSearch(Array.isArray(types) ? types : [types], new URLSearchParams(query), { defaultCount: 100, maxCount: 100 })
  const page = await runSearch(sql, q, BASE)
  return page.matches.map((m) => m.id).sort()
}

const filter = (types: string | string[], text: string) => ids(types, new URLSearchParams({ _filter: text }).toString())

describe('_filter searches', () => {
  test('the examples of the brief', async () => {
    expect(await filter('Patient', 'name sw "smi" and gender eq female')).toEqual(['p2'])
    expect(await filter('Patient', '(family eq Smith or family eq Jones) and not(gender eq male)')).toEqual(['p3'])
    expect(await filter('Patient', 'identifier eq http://x|1')).toEqual(['p1'])
  })

  test('string: eq is case- and accent-insensitive equality; sw, ew, co, ne and order on the normalised value', async () => {
    expect(await filter('Patient', 'family eq smith')).toEqual(['p1'])
    expect(await filter('Patient', 'family eq "muller"')).toEqual(['p4'])
    expect(await filter('Patient', 'family sw smith')).toEqual(['p1', 'p2'])
    expect(await filter('Patient', 'family ew SON')).toEqual(['p2'])
    expect(await filter('Patient', 'name co "mit"')).toEqual(['p1', 'p2'])
    expect(await filter('Patient', 'family ne smith')).toEqual(['p2', 'p3', 'p4'])
    expect(await filter('Patient', 'family gt n')).toEqual(['p1', 'p2'])
    expect(await filter('Patient', 'family le jones')).toEqual(['p3'])
    expect(await filter('Patient', 'family ew "%"')).toEqual([]) // LIKE wildcards are literal
  })

  test('token: eq as the plain search; ne is "some other code" (HAPI), not() is "no such code"', async () => {
    expect(await filter('Patient', 'gender eq female')).toEqual(['p2', 'p3'])
    expect(await filter('Patient', 'gender ne male')).toEqual(['p2', 'p3'])
    expect(await filter('Patient', 'not(gender eq male)')).toEqual(['p2', 'p3', 'p4'])
    expect(await filter('Patient', 'identifier ne http://x|1')).toEqual(['p1', 'p2', 'p3'])
    expect(await filter('Patient', 'not(identifier eq http://x|1)')).toEqual(['p2', 'p3', 'p4'])
    expect(await filter('Patient', 'identifier eq "http://y|1"')).toEqual(['p3'])
    expect(await filter('Patient', 'identifier eq |1')).toEqual([])
  })

  test('reference: eq and ne', async () => {
    expect(await filter('Observation', 'subject eq Patient/p1')).toEqual(['o1'])
    expect(await filter('Observation', 'subject eq p1')).toEqual(['o1'])
    expect(await filter('Observation', 'subject ne Patient/p1')).toEqual(['o2'])
    expect(await filter('Observation', 'not(subject eq Patient/p1)')).toEqual(['o2', 'o3'])
  })

  test('uri: eq, ne, sw, ew, co and order on the URL as written', async () => {
    expect(await filter('ValueSet', 'url eq http://example.org/fhir/ValueSet/alpha')).toEqual(['vs1'])
    expect(await filter('ValueSet', 'url ne http://example.org/fhir/ValueSet/alpha')).toEqual(['vs2'])
    expect(await filter('ValueSet', 'url sw http://example.org/fhir/')).toEqual(['vs1'])
    expect(await filter('ValueSet', 'url ew /beta')).toEqual(['vs2'])
    expect(await filter('ValueSet', 'url co example.org')).toEqual(['vs1', 'vs2'])
    expect(await filter('ValueSet', 'url gt http://example.org/g')).toEqual(['vs2'])
  })

  test('_id, and a system search over several types', async () => {
    expect(await filter('Patient', '_id eq p1 or _id eq p3')).toEqual(['p1', 'p3'])
    expect(await filter('Patient', '_id ne p1')).toEqual(['p2', 'p3', 'p4'])
    expect(await filter(['Patient', 'Observation'], '_id eq p1 or _id eq o2')).toEqual(['o2', 'p1'])
  })

  test('and binds tighter than or (HAPI would read this one as female and (jones or male))', async () => {
    expect(await filter('Patient', 'gender eq female and family eq jones or gender eq male')).toEqual(['p1', 'p3'])
    expect(await filter('Patient', 'gender eq female and (family eq jones or gender eq male)')).toEqual(['p3'])
  })

  test('with other parameters, several _filter parameters, and inside _has', async () => {
    expect(await ids('Patient', '_filter=gender+eq+female&family=smithson')).toEqual(['p2'])
    expect(await ids('Patient', '_filter=gender+eq+female&_filter=family+sw+jo')).toEqual(['p3'])
    expect(await ids('Patient', `${encodeURIComponent('_has:Observation:subject:_filter')}=${encodeURIComponent('status eq final')}`)).toEqual(['p1'])
  })

  test.if(handlerFor('date') !== undefined)('date: the operator is the prefix', async () => {
    expect(await filter('Patient', 'birthdate ge 1990')).toEqual(['p2', 'p3'])
    expect(await filter('Patient', 'birthdate lt 1990-01-01 or birthdate eq 2001')).toEqual(['p1', 'p3'])
    expect(await filter('Patient', '_lastUpdated gt 2000-01-01')).toEqual(['p1', 'p2', 'p3', 'p4'])
  })

  test.if(handlerFor('number') !== undefined && handlerFor('quantity') !== undefined)('number and quantity: the operator is the prefix', async () => {
    expect(await filter('RiskAssessment', 'probability gt 0.5')).toEqual(['ra1'])
    expect(await filter('RiskAssessment', 'probability le 0.5 or probability eq 0.8')).toEqual(['ra1', 'ra2'])
    expect(await filter('Observation', 'value-quantity gt 6')).toEqual(['o2'])
    expect(await filter('Observation', 'value-quantity le "5.4|http://unitsofmeasure.org|mg"')).toEqual(['o1'])
    expect(await filter('Observation', 'value-quantity ne 10')).toEqual(['o1'])
  })
})
