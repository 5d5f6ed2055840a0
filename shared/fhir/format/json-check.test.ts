// The checks JSON.parse does not make (json-check.ts): a key named twice in one object and an escaped NUL,
// in compact and pretty-printed text, also where the fast path's counts could hide a duplicate.
import { describe, expect, test } from 'bun:test'
import { checkJsonText } from './json-check'

const check = (text: string) => () => checkJsonText(text, JSON.parse(text))

describe('checkJsonText', () => {
  test('documents without duplicates pass, pretty or compact, with ": inside strings', () => {
    for (const text of ['{"a":1,"b":{"c":[{"d":"x\\":y"}]}}', JSON.stringify({ a: 1, b: { c: [{ a: 1 }, { a: 2 }] } }, null, 2), '{"a" : 1,\n"b"\t:\r\n2}'])
      expect(check(text)).not.toThrow()
  })

  test('a key named twice in one object is refused, naming it', () => {
    expect(check('{"a":1,"b":{"c":1,"c":2}}')).toThrow('the same property "c" appears twice')
    expect(check(JSON.stringify({ x: 1 }, null, 2).replace('}', ',\n  "x": 2\n}'))).toThrow('"x" appears twice')
  })

  test('whitespace before the colon cannot hide a duplicate behind a ": in a string', () => {
    // Two keys without a `":` mark, one mark inside a string: the counts alone would agree.
    for (const ws of [' ', '\n', '\t', '\r', ' \n ']) expect(check(`{"a"${ws}:1,"a"${ws}:2,"b":"x\\":y"}`)).toThrow('"a" appears twice')
  })

  test('an escaped NUL is refused; an escaped backslash before u0000 is text', () => {
    expect(check('{"a":"x\\u0000"}')).toThrow('NUL')
    expect(check('{"a":"x\\\\u0000"}')).not.toThrow()
  })
})
