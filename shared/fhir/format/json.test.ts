import { describe, expect, test } from 'bun:test'
import { cloneJson, decimalValue, numberText, parseFhirJson } from './json'

describe('parseFhirJson', () => {
  test('keeps decimals as written and leaves other numbers plain', () => {
    const text = '{"a":1.50,"b":2,"c":0.1,"d":1e2,"e":-0.0,"f":[3.10,4],"g":"1.50"}'
    const v = parseFhirJson(text)
    expect(JSON.stringify(v)).toBe('{"a":1.50,"b":2,"c":0.1,"d":1e2,"e":-0.0,"f":[3.10,4],"g":"1.50"}')
    expect(typeof v.b).toBe('number')
    expect(typeof v.c).toBe('number')
    expect(decimalValue(v.a)).toBe(1.5)
    expect(numberText(v.a)).toBe('1.50')
    expect(decimalValue(v.g)).toBeUndefined()
  })

  test('cloneJson copies deeply and keeps raw decimals', () => {
    const v = parseFhirJson('{"q":{"value":1.50},"list":[{"x":1}]}')
    const c = cloneJson(v)
    c.list[0].x = 2
    expect(v.list[0].x).toBe(1)
    expect(JSON.stringify(c.q)).toBe('{"value":1.50}')
  })
})

describe('parseFhirJson fast path', () => {
  test('numbers inside strings, escaped quotes included, do not count as numbers', () => {
    const v = parseFhirJson('{"a":"seed: -48434823414011925 and 1.50","b":"q\\\\","c":"x\\"1.50","d":1.5}')
    expect(v.a).toBe('seed: -48434823414011925 and 1.50')
    expect(v.c).toBe('x"1.50')
    expect(typeof v.d).toBe('number')
  })

  test('a number JavaScript would rewrite anywhere in the document keeps its text', () => {
    expect(JSON.stringify(parseFhirJson('{"a":"1.50","list":[1,2,{"x":3.140}]}'))).toBe('{"a":"1.50","list":[1,2,{"x":3.140}]}')
    expect(JSON.stringify(parseFhirJson('[12345678901234567890]'))).toBe('[12345678901234567890]')
  })
})

describe('parseFhirJson number detection', () => {
  test('finds a rewritten number wherever JSON puts one: first in an array, after whitespace, last in an object, alone', () => {
    for (const text of ['[1.50]', '{"a": 1.50 }', '{"a":[2, 1.0]}', '{"a":{"b":-0}}', '{"a":1E2}', '{"a":0.0000001}', '1.50', ' 2.50 ']) {
      expect(JSON.stringify(parseFhirJson(text))).toBe(text.replace(/\s+/g, ''))
    }
  })

  test('times and numbers inside strings neither break parsing nor need the reviver to be right', () => {
    const text = '{"t":"2019-01-01T10:11:12.000-05:00","s":"ratio:1.50,","n":7}'
    const v = parseFhirJson(text)
    expect(v.t).toBe('2019-01-01T10:11:12.000-05:00')
    expect(v.s).toBe('ratio:1.50,')
    expect(v.n).toBe(7)
    expect(JSON.stringify(v)).toBe(text)
  })
})

describe('parseFhirJson number scan', () => {
  // Were every position of the runs a start, the scan would be quadratic (hours for these texts), past
  // the test timeout.
  test('long runs of digits inside strings keep the scan linear', () => {
    for (const run of [`${'7'.repeat(2_000_000)}`, `x, ${'7'.repeat(2_000_000)}x`, `: ${'1.'.repeat(1_000_000)}`]) {
      const text = `{"a":"${run}","b":1.50}`
      expect(JSON.stringify(parseFhirJson(text)).endsWith('"b":1.50}')).toBe(true)
    }
  })

  test('negative, exponent and fraction forms after every JSON separator', () => {
    for (const text of ['{"a":-1.50}', '{"a":[0,-2.10]}', '{"a":\n\t1.0e5\n}', '{"a":[\r\n3.00\r\n]}', '{"a":1,"b":-0.0}']) {
      expect(JSON.stringify(parseFhirJson(text))).toBe(text.replace(/\s+/g, ''))
    }
  })
})
