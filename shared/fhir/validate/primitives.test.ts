import { describe, expect, test } from 'bun:test'
import { primitiveCheck } from './primitives'

function valid(type: string, ...values: unknown[]) {
  for (const v of values) expect([type, v, primitiveCheck(type)(v)]).toEqual([type, v, undefined])
}
function invalid(type: string, ...values: unknown[]) {
  for (const v of values) expect([type, v, typeof primitiveCheck(type)(v)]).toEqual([type, v, 'string'])
}

describe('primitive checks', () => {
  test('boolean', () => {
    valid('boolean', true, false)
    invalid('boolean', 'true', 0, 1)
  })

  test('integer types and their ranges', () => {
    valid('integer', 0, -2147483648, 2147483647)
    invalid('integer', 1.5, '1', 2147483648)
    valid('unsignedInt', 0)
    invalid('unsignedInt', -1)
    valid('positiveInt', 1)
    invalid('positiveInt', 0)
  })

  test('decimal is a JSON number', () => {
    valid('decimal', 0, -1.25, 1e-7)
    invalid('decimal', '1.0', true)
  })

  test('string and markdown are non-empty strings; NBSP is allowed', () => {
    valid('string', ' x ', 'a\u00a0b', '\n')
    invalid('string', '', 1)
    invalid('markdown', '')
  })

  test('code: single inner spaces only', () => {
    valid('code', 'final', 'a b', 'ÄÖ')
    invalid('code', ' a', 'a ', 'a  b', 'a\tb', '')
  })

  test('uri, url, canonical: no whitespace', () => {
    valid('uri', 'urn:x', 'http://a/b?c=d')
    invalid('uri', 'a b', '')
    invalid('canonical', 'http://x\n')
  })

  test('id, oid, uuid', () => {
    valid('id', 'a', 'A-1.b', 'x'.repeat(64))
    invalid('id', 'a_b', 'x'.repeat(65), '')
    valid('oid', 'urn:oid:1.2.840.10008')
    invalid('oid', '1.2.3')
    valid('uuid', 'urn:uuid:c757873d-ec9a-4326-a141-556f43239520')
    invalid('uuid', 'urn:uuid:C757873D-EC9A-4326-A141-556F43239520')
  })

  test('date, dateTime, instant, time', () => {
    valid('date', '2020', '2020-02', '2020-02-29', '2000-02-29')
    invalid('date', '2021-02-29', '1900-02-29', '2020-04-31', '2020-13', '20-01-01', '2020-01-01T00:00:00Z')
    valid('dateTime', '2020', '2020-01-01', '2020-01-01T10:00:00Z', '2020-01-01T10:00:00.123+05:30')
    invalid('dateTime', '2020-01-01T10:00', '2020-01-01T10:00:00', '2020-06-31T00:00:00Z')
    valid('instant', '2020-01-01T10:00:00Z')
    invalid('instant', '2020-01-01', '2020-01-01T10:00:00')
    valid('time', '10:00:00', '23:59:59.5')
    invalid('time', '24:00:00', '10:00')
  })

  test('base64Binary', () => {
    valid('base64Binary', 'SGVsbG8=', 'SGVs\nbG8=')
    invalid('base64Binary', 'SGVsbG8', 'SGV$bG8=', '')
  })

  test('xhtml must open with a div', () => {
    valid('xhtml', '<div xmlns="http://www.w3.org/1999/xhtml"/>', '\n<div>x</div>')
    invalid('xhtml', 'x', '<p>x</p>', 1)
  })
})
