// Runs every case of the HL7 FHIR Patch test file (fhir-test-cases r4/patch/fhir-patch-tests.xml): each
// case's input, diff (the Parameters) and output are FHIR XML, read with the definition-driven parser.
import { dataPath } from '../../../tests/data'
import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { AppError } from '../../errors'
import { parseFhirXml } from '../format/xml-parse'
import { readXml, type XmlElement } from '../format/xml-reader'
import { applyFhirPatch } from './fhir-patch'

const FILE = dataPath('fhir-test-cases', 'r4', 'patch', 'fhir-patch-tests.xml')

interface Case {
  name: string
  input: string
  diff: string
  output?: string
  error?: string
}

/** Splits the case file; each section holds one resource whose own xmlns makes it a document. */
function loadCases(): Case[] {
  if (!existsSync(FILE)) throw new Error(`HL7 FHIR Patch test cases not found at ${FILE}`)
  const text = readFileSync(FILE, 'utf8')
  const section = (body: string, tag: string) => new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`).exec(body)?.[1]?.trim()
  return [...text.matchAll(/<case\s+name="([^"]*)"[^>]*>([\s\S]*?)<\/case>/g)].map(([, name, body]) => ({
    name,
    input: section(body, 'input')!,
    diff: section(body, 'diff')!,
    output: section(body, 'output'),
    error: /<error\s+msg="([^"]*)"/.exec(body)?.[1],
  }))
}

/**
 * Narrative XHTML compared as XML, not text: the parser keeps `div` verbatim (`&quot;Jim&quot;`) while
 * a patch value carries the decoded string (`"Jim"`); both are the same XHTML. https://hl7.org/fhir/R4/narrative.html
 */
function comparable(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(comparable)
  if (!node || typeof node !== 'object') return node
  return Object.fromEntries(
    Object.entries(node).map(([k, v]) => [k, k === 'div' && typeof v === 'string' ? infoset(readXml(v, { maxDepth: 100 })) : comparable(v)]),
  )
}

function infoset(el: XmlElement | string): unknown {
  if (typeof el === 'string') return el
  const attrs = el.attrs.map((a) => `${a.ns}|${a.name}=${a.value}`).sort()
  return { ns: el.ns, name: el.name, attrs, children: el.children.map(infoset) }
}

const cases = loadCases()
let passed = 0

describe('HL7 fhir-patch-tests.xml', () => {
  test('the case file has all 33 cases', () => {
    expect(cases.length).toBe(33)
    for (const c of cases) expect(c.input && c.diff && (c.output || c.error)).toBeTruthy()
  })

  for (const c of cases) {
    test(c.name, () => {
      const input = parseFhirXml(c.input)
      const before = structuredClone(input)
      const diff = parseFhirXml(c.diff)
      if (c.error !== undefined) {
        let thrown: unknown
        try {
          applyFhirPatch(input, diff)
        } catch (e) {
          thrown = e
        }
        expect(thrown).toBeInstanceOf(AppError)
        expect((thrown as AppError).category).toBe('invalid')
        expect((thrown as AppError).issues[0]?.code).toBe('invalid')
      } else {
        expect(comparable(applyFhirPatch(input, diff))).toEqual(comparable(parseFhirXml(c.output!)))
      }
      expect(input).toEqual(before) // never mutates its input
      passed++
    })
  }

  afterAll(() => {
    console.log(`fhir-patch-tests.xml: ${passed}/${cases.length} cases pass`)
  })
})

/** A Parameters resource of one operation per entry: `{ type, path, ... }` with the value part given as is. */
function patch(...ops: Record<string, any>[]): any {
  return {
    resourceType: 'Parameters',
    parameter: ops.map(({ type, path, name, index, source, destination, value }) => ({
      name: 'operation',
      part: [
        { name: 'type', valueCode: type },
        { name: 'path', valueString: path },
        ...(name !== undefined ? [{ name: 'name', valueString: name }] : []),
        ...(index !== undefined ? [{ name: 'index', valueInteger: index }] : []),
        ...(source !== undefined ? [{ name: 'source', valueInteger: source }] : []),
        ...(destination !== undefined ? [{ name: 'destination', valueInteger: destination }] : []),
        ...(value !== undefined ? [{ name: 'value', ...value }] : []),
      ],
    })),
  }
}

function invalidError(fn: () => unknown): AppError {
  try {
    fn()
  } catch (e) {
    expect(e).toBeInstanceOf(AppError)
    expect((e as AppError).category).toBe('invalid')
    return e as AppError
  }
  throw new Error('expected an invalid error')
}

describe('applyFhirPatch', () => {
  const ext = { url: 'http://example.org/x', valueString: 'x' }

  test('keeps `_given` aligned when deleting, inserting and moving primitives', () => {
    const p = { resourceType: 'Patient', name: [{ given: ['a', 'b', 'c'], _given: [null, { id: 'b' }, null] }] }
    expect(applyFhirPatch(p, patch({ type: 'delete', path: 'Patient.name[0].given[0]' }))).toEqual({
      resourceType: 'Patient',
      name: [{ given: ['b', 'c'], _given: [{ id: 'b' }, null] }],
    })
    expect(applyFhirPatch(p, patch({ type: 'delete', path: 'Patient.name[0].given[1]' }))).toEqual({
      resourceType: 'Patient',
      name: [{ given: ['a', 'c'] }],
    })
    expect(applyFhirPatch(p, patch({ type: 'insert', path: 'Patient.name[0].given', index: 0, value: { valueString: 'z' } }))).toEqual({
      resourceType: 'Patient',
      name: [{ given: ['z', 'a', 'b', 'c'], _given: [null, null, { id: 'b' }, null] }],
    })
    expect(applyFhirPatch(p, patch({ type: 'move', path: 'Patient.name[0].given', source: 1, destination: 2 }))).toEqual({
      resourceType: 'Patient',
      name: [{ given: ['a', 'c', 'b'], _given: [null, null, { id: 'b' }] }],
    })
  })

  test('adds an extension to a primitive under its `_name` companion, and deletes it again', () => {
    const p = { resourceType: 'Patient', birthDate: '1970-01-01' }
    const parts = [
      { name: 'url', valueUri: ext.url },
      { name: 'value', valueString: 'x' },
    ]
    const added = applyFhirPatch(p, patch({ type: 'add', path: 'Patient.birthDate', name: 'extension', value: { part: parts } }))
    expect(added).toEqual({ resourceType: 'Patient', birthDate: '1970-01-01', _birthDate: { extension: [ext] } })
    expect(applyFhirPatch(added, patch({ type: 'delete', path: `Patient.birthDate.extension('${ext.url}')` }))).toEqual(p)
  })

  test('a primitive given as a value keeps its own id and extensions', () => {
    const p = { resourceType: 'Patient' }
    const value = { valueDate: '1970', _valueDate: { id: 'd' } }
    const out = applyFhirPatch(p, patch({ type: 'add', path: 'Patient', name: 'birthDate', value }))
    expect(out).toEqual({ resourceType: 'Patient', birthDate: '1970', _birthDate: { id: 'd' } })
  })

  test('replace may change the type of a choice element', () => {
    const o = { resourceType: 'Observation', status: 'final', code: { text: 't' }, valueQuantity: { value: 1.5, unit: 'mg' } }
    expect(applyFhirPatch(o, patch({ type: 'replace', path: 'Observation.value', value: { valueString: 'high' } }))).toEqual({
      resourceType: 'Observation',
      status: 'final',
      code: { text: 't' },
      valueString: 'high',
    })
  })

  test('adds a choice element under its typed JSON name', () => {
    const p = { resourceType: 'Patient' }
    expect(applyFhirPatch(p, patch({ type: 'add', path: 'Patient', name: 'deceased', value: { valueDateTime: '2020-01-01' } }))).toEqual({
      resourceType: 'Patient',
      deceasedDateTime: '2020-01-01',
    })
  })

  test('selects with where() and edits only the match', () => {
    const p = {
      resourceType: 'Patient',
      identifier: [
        { system: 'a', value: '1' },
        { system: 'b', value: '2' },
      ],
    }
    const path = "Patient.identifier.where(system='b').value"
    expect(applyFhirPatch(p, patch({ type: 'replace', path, value: { valueString: '3' } }))).toEqual({
      resourceType: 'Patient',
      identifier: [
        { system: 'a', value: '1' },
        { system: 'b', value: '3' },
      ],
    })
  })

  test('adds a contained resource from a `resource` part', () => {
    const p = { resourceType: 'Patient' }
    const org = { resourceType: 'Organization', id: 'o', name: 'Acme' }
    const out = applyFhirPatch(p, patch({ type: 'add', path: 'Patient', name: 'contained', value: { resource: org } }))
    expect(out).toEqual({ resourceType: 'Patient', contained: [org] })
  })

  test('inserts into a list that does not exist yet at index 0', () => {
    const p = { resourceType: 'Patient' }
    const value = { valueIdentifier: { value: '1' } }
    expect(applyFhirPatch(p, patch({ type: 'insert', path: 'Patient.identifier', index: 0, value }))).toEqual({
      resourceType: 'Patient',
      identifier: [{ value: '1' }],
    })
  })

  test('delete of a missing element is not an error', () => {
    const p = { resourceType: 'Patient', active: true }
    expect(applyFhirPatch(p, patch({ type: 'delete', path: 'Patient.birthDate' }))).toEqual(p)
  })

  test('never mutates its input', () => {
    const p = { resourceType: 'Patient', name: [{ family: 'a' }] }
    applyFhirPatch(p, patch({ type: 'replace', path: 'Patient.name[0].family', value: { valueString: 'b' } }))
    expect(p).toEqual({ resourceType: 'Patient', name: [{ family: 'a' }] })
  })

  test('rejects what cannot apply, naming the path', () => {
    const p = { resourceType: 'Patient', birthDate: '1970', identifier: [{ value: '1' }, { value: '2' }] }
    const cases: [string, any][] = [
      ['add to an existing single element', patch({ type: 'add', path: 'Patient', name: 'birthDate', value: { valueDate: '1980' } })],
      ['add of an unknown element', patch({ type: 'add', path: 'Patient', name: 'colour', value: { valueString: 'x' } })],
      ['a value of the wrong type', patch({ type: 'replace', path: 'Patient.birthDate', value: { valueBoolean: true } })],
      ['a string that is not a date', patch({ type: 'replace', path: 'Patient.birthDate', value: { valueString: 'soon' } })],
      ['a wrong complex type', patch({ type: 'add', path: 'Patient', name: 'identifier', value: { valueHumanName: { text: 'x' } } })],
      ['replace of several elements', patch({ type: 'replace', path: 'Patient.identifier.value', value: { valueString: '3' } })],
      ['delete of several elements', patch({ type: 'delete', path: 'Patient.identifier' })],
      ['replace of nothing', patch({ type: 'replace', path: 'Patient.gender', value: { valueCode: 'male' } })],
      ['insert past the end', patch({ type: 'insert', path: 'Patient.identifier', index: 3, value: { valueIdentifier: { value: '3' } } })],
      ['move out of range', patch({ type: 'move', path: 'Patient.identifier', source: 0, destination: 2 })],
      ['insert into a single element', patch({ type: 'insert', path: 'Patient.birthDate', index: 0, value: { valueDate: '1980' } })],
      ['a missing value', patch({ type: 'replace', path: 'Patient.birthDate' })],
      ['an unknown operation type', patch({ type: 'upsert', path: 'Patient.birthDate' })],
      ['a bad FHIRPath', patch({ type: 'delete', path: 'Patient.(' })],
      ['replace of the resource itself', patch({ type: 'replace', path: 'Patient', value: { valueString: 'x' } })],
    ]
    for (const [label, params] of cases) {
      const error = invalidError(() => applyFhirPatch(p, params))
      expect(error.issues[0]?.code, label).toBe('invalid')
    }
    const missing = patch({ type: 'replace', path: 'Patient.gender', value: { valueCode: 'male' } })
    expect(invalidError(() => applyFhirPatch(p, missing)).issues[0]?.expression).toEqual(['Patient.gender'])
    invalidError(() => applyFhirPatch(p, { resourceType: 'Bundle' }))
    invalidError(() => applyFhirPatch(p, { resourceType: 'Parameters', parameter: [{ name: 'other', valueString: 'x' }] }))
  })
})
