import { expect, test } from 'bun:test'
import { pathOf } from './url-path'

test('pathOf says what new URL(url).pathname says', () => {
  const paths = [
    '/',
    '/fhir/Observation',
    '/fhir/Observation?subject=Patient/1&code=http://loinc.org|8302-2',
    '/admin/queues',
    '/admin/queues/api/queues?x=1#frag',
    '/fhir/../admin/queues',
    '/./admin',
    '/fhir/%2e%2e/admin',
    '/%61dmin/queues',
    '/fhir\\..\\admin',
    '/fhir/Patient/a b',
    '/fhir/Patient/é',
    '/fhir/"<>`{}|^',
    '/fhir//x',
    '/fhir/$everything',
    "/fhir/Patient/!$&'()*+,;=:@-_~",
    '/metrics#x',
    '/fhir/a.b',
  ]
  for (const p of paths)
    for (const base of ['http://127.0.0.1:8080', 'https://example.org', 'http://[::1]:80']) {
      const url = `${base}${p}`
      expect(pathOf(url)).toBe(new URL(url).pathname)
    }
  expect(pathOf('http://example.org')).toBe('/')
  for (const url of [
    'http://example.org?x=1',
    'http://example.org?x=/admin',
    'http://example.org#/admin',
    'http://example.org\\admin',
    'http://u@example.org/admin',
  ])
    expect(pathOf(url)).toBe(new URL(url).pathname)
})
