// Full-text search: `_text` on the narrative and `_content` on the values of string elements, as HAPI
// FHIR indexes them, on PostgreSQL's own full-text search. Resources written here, and Synthea patients
// whose expected matches are computed from the files. https://hl7.org/fhir/R4/search.html#text
import { beforeAll, describe, expect, test } from 'bun:test'
import { useTestServer } from './harness'
import { type Loaded, loadSynthea, ofType } from './load-data'
import { keys, matchKeysOf, putOk } from './search-expect'

const s = useTestServer({ ENFORCE_REFERENTIAL_INTEGRITY: 'false' })
let data: Loaded

beforeAll(async () => {
  data = await loadSynthea(s, 5)
}, 60_000)

const all = (type: string) => ofType(data, type)
const families = (p: any): string[] => (p.name ?? []).map((n: any) => n.family).filter((f: unknown) => typeof f === 'string' && f.trim() !== '')
const matchKeys = (path: string) => matchKeysOf(s, path)
const put = (resource: any) => putOk(s, resource)

describe('_text and _content', () => {
  // The words of a value as PostgreSQL's `simple` configuration splits them, near enough for names.
  const words = (v: string) =>
    v
      .toLowerCase()
      .split(/[^\p{L}\p{N}]+/u)
      .filter(Boolean)

  test('_content finds the values of string elements, as HAPI indexes them; codes, ids, references, dates and the narrative are not content', async () => {
    await put({
      resourceType: 'Observation',
      id: 'content-a',
      status: 'final',
      text: { status: 'generated', div: '<div xmlns="http://www.w3.org/1999/xhtml">Quintessence <b>narrated</b></div>' },
      identifier: [{ system: 'http://example.org/ids', value: 'idvaluexq' }],
      code: { coding: [{ system: 'http://example.org/codes', code: 'codexq', display: 'Zephyrine measurement' }], text: 'Zephyrine' },
      subject: { reference: 'Patient/referencexq', display: 'Displayedxq Person' },
      effectiveDateTime: '2019-04-05',
      valueString: 'Xylophonic',
      note: [{ text: 'markdownxq note' }],
      extension: [{ url: 'http://example.org/ext', valueString: 'Extensionxq' }],
      contained: [{ resourceType: 'Practitioner', id: 'pr1', name: [{ family: 'Containedxq' }] }],
    })
    for (const word of ['zephyrine', 'MEASUREMENT', 'xylophonic', 'idvaluexq', 'displayedxq', 'extensionxq', 'containedxq'])
      expect({ word, found: await matchKeys(`/Observation?_content=${word}`) }).toEqual({ word, found: ['Observation/content-a'] })
    // code, id, reference, date, markdown (Annotation.text) and narrative words are not content
    for (const word of ['codexq', 'content-a', 'referencexq', '2019', 'markdownxq', 'quintessence'])
      expect({ word, found: await matchKeys(`/Observation?_content=${word}`) }).toEqual({ word, found: [] })
    // the narrative is _text's, and _text reads nothing else
    expect(await matchKeys('/Observation?_text=quintessence')).toEqual(['Observation/content-a'])
    expect(await matchKeys('/Observation?_text=narrated')).toEqual(['Observation/content-a'])
    expect(await matchKeys('/Observation?_text=zephyrine')).toEqual([])
    // several words are all required; a comma is OR
    expect(await matchKeys('/Observation?_content=zephyrine xylophonic')).toEqual(['Observation/content-a'])
    expect(await matchKeys('/Observation?_content=zephyrine nosuchwordxq')).toEqual([])
    expect(await matchKeys('/Observation?_content=nosuchwordxq,xylophonic')).toEqual(['Observation/content-a'])
  })

  test('Patient?_content=<Synthea family name> finds the patients that carry it in a string element', async () => {
    const patients = all('Patient')
    const synthea = patients.filter((p) => (p.identifier ?? []).some((i: any) => String(i.system ?? '').includes('synthetichealth')))
    expect(synthea.length).toBeGreaterThan(0)
    const family = families(synthea[0])[0]
    const word = words(family)[0]
    // every string a Patient holds in its names, addresses, telecoms, identifiers, contacts and
    // communication displays: the string elements of the R4 Patient that Synthea fills
    const strings = (p: any): string[] =>
      [
        ...(p.name ?? []).flatMap((n: any) => [n.family, n.text, ...(n.given ?? []), ...(n.prefix ?? []), ...(n.suffix ?? [])]),
        ...(p.address ?? []).flatMap((a: any) => [a.text, ...(a.line ?? []), a.city, a.district, a.state, a.postalCode, a.country]),
        ...(p.telecom ?? []).map((t: any) => t.value),
        ...(p.identifier ?? []).flatMap((i: any) => [i.value, i.type?.text, ...(i.type?.coding ?? []).map((c: any) => c.display)]),
        ...(p.contact ?? []).flatMap((c: any) => [c.name?.family, ...(c.name?.given ?? [])]),
        ...(p.maritalStatus?.coding ?? []).map((c: any) => c.display),
        p.maritalStatus?.text,
        ...(p.communication ?? []).flatMap((c: any) => [c.language?.text, ...(c.language?.coding ?? []).map((x: any) => x.display)]),
        ...(p.extension ?? []).flatMap((e: any) => [e.valueString, ...(e.extension ?? []).flatMap((x: any) => [x.valueString, x.valueCoding?.display])]),
      ].filter((v): v is string => typeof v === 'string')
    const expected = patients.filter((p) => strings(p).some((v) => words(v).includes(word)))
    expect(expected.length).toBeGreaterThan(0)
    expect(await matchKeys(`/Patient?_content=${encodeURIComponent(word)}`)).toEqual(keys(expected))
  })
})
