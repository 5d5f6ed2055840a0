// Runs every case of the HL7 JSON Patch test file (fhir-test-cases r4/patch/json-patch-tests.json).
import { dataPath } from '../../../tests/data'
import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { AppError } from '../../errors'
import { applyJsonPatch } from './json-patch'

const FILE = dataPath('fhir-test-cases', 'r4', 'patch', 'json-patch-tests.json')

interface Case {
  comment: string
  doc: unknown
  patch: unknown
  expected?: unknown
  error?: string
}

function loadCases(): Case[] {
  if (!existsSync(FILE)) throw new Error(`HL7 JSON Patch test cases not found at ${FILE}`)
  return JSON.parse(readFileSync(FILE, 'utf8'))
}

const cases = loadCases()
let passed = 0

describe('HL7 json-patch-tests.json', () => {
  test('the case file is not empty', () => {
    expect(cases.length).toBeGreaterThan(0)
  })

  for (const c of cases) {
    test(c.comment, () => {
      const before = structuredClone(c.doc)
      if (c.error !== undefined) {
        let thrown: unknown
        try {
          applyJsonPatch(c.doc, c.patch)
        } catch (e) {
          thrown = e
        }
        expect(thrown).toBeInstanceOf(AppError)
        expect((thrown as AppError).category).toBe('invalid')
      } else {
        expect(applyJsonPatch(c.doc, c.patch)).toEqual(c.expected)
      }
      expect(c.doc).toEqual(before) // never mutates its input
      passed++
    })
  }

  afterAll(() => {
    console.log(`json-patch-tests.json: ${passed}/${cases.length} cases pass`)
  })
})

describe('applyJsonPatch', () => {
  test('rejects a body that is not an array', () => {
    expect(() => applyJsonPatch({}, { op: 'add' })).toThrow(AppError)
  })

  test('rejects an unknown op', () => {
    expect(() => applyJsonPatch({}, [{ op: 'merge', path: '/a' }])).toThrow(AppError)
  })

  test('copy duplicates without aliasing', () => {
    const out = applyJsonPatch({ a: { b: 1 } }, [
      { op: 'copy', from: '/a', path: '/c' },
      { op: 'replace', path: '/c/b', value: 2 },
    ])
    expect(out).toEqual({ a: { b: 1 }, c: { b: 2 } })
  })

  test('move may not put a value inside itself', () => {
    expect(() => applyJsonPatch({ a: { b: 1 } }, [{ op: 'move', from: '/a', path: '/a/b/c' }])).toThrow(AppError)
  })

  test('remove and replace need an existing target', () => {
    expect(() => applyJsonPatch({ a: 1 }, [{ op: 'remove', path: '/b' }])).toThrow(AppError)
    expect(() => applyJsonPatch({ a: [1] }, [{ op: 'replace', path: '/a/1', value: 2 }])).toThrow(AppError)
  })

  test('add with "-" appends and leading zeros are not indices', () => {
    expect(applyJsonPatch({ a: [1] }, [{ op: 'add', path: '/a/-', value: 2 }])).toEqual({ a: [1, 2] })
    expect(() => applyJsonPatch({ a: [1, 2] }, [{ op: 'remove', path: '/a/01' }])).toThrow(AppError)
  })

  test('test compares objects regardless of key order', () => {
    expect(() => applyJsonPatch({ a: { x: 1, y: [2] } }, [{ op: 'test', path: '/a', value: { y: [2], x: 1 } }])).not.toThrow()
  })
})
