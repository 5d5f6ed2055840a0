// The FHIR XML reader and writer: behaviour on small inputs, round trips over the shared example data
// (../shared/data beside the checkout, see its README), the hostile-input cases and a speed print.
import { DATA_DIR } from '../../../tests/data'
import { describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { AppError } from '../../errors'
import { parseFhirXml } from './xml-parse'
import { XMLNS_NS } from './xml-names'
import { readXml, type XmlElement } from './xml-reader'
import { toFhirXml } from './xml-write'
import { parseFhirJson } from './json'

const FHIR = 'xmlns="http://hl7.org/fhir"'
const DIV = '<div xmlns="http://www.w3.org/1999/xhtml">'

/** A folder of the shared test data; missing data is a failure, never a skip. */
function dataDir(sub: string): string {
  const dir = join(DATA_DIR, sub)
  if (!existsSync(dir)) throw new Error(`Test data missing: ${dir} (expected ../shared/data beside the checkout)`)
  return dir
}

function files(dir: string, ext: string): string[] {
  const out = readdirSync(dir)
    .filter((f) => f.endsWith(ext))
    .sort()
  if (!out.length) throw new Error(`No ${ext} files in ${dir}`)
  return out
}

function readJson(path: string): any {
  return parseFhirJson(readFileSync(path, 'utf8')) // decimals as written: the round trip must keep them
}

/** The AppError thrown by `fn`, or a failure. */
function appError(fn: () => unknown): AppError {
  try {
    fn()
  } catch (err) {
    expect(err).toBeInstanceOf(AppError)
    return err as AppError
  }
  throw new Error('expected an AppError')
}

describe('parseFhirXml', () => {
  test('primitives become JSON types, with id and extensions in _name', () => {
    const r = parseFhirXml(`<?xml version="1.0" encoding="UTF-8"?>
      <Patient ${FHIR}>
        <!-- comments are ignored -->
        <id value="p1"/>
        <active value="true"/>
        <birthDate id="bd" value="1970-01-01">
          <extension url="http://example.org/time"><valueTime value="10:00:00"/></extension>
        </birthDate>
        <multipleBirthInteger value="2"/>
      </Patient>`)
    expect(r).toEqual({
      resourceType: 'Patient',
      id: 'p1',
      active: true,
      birthDate: '1970-01-01',
      _birthDate: { id: 'bd', extension: [{ url: 'http://example.org/time', valueTime: '10:00:00' }] },
      multipleBirthInteger: 2,
    })
  })

  test('repeating elements are arrays even with one child; primitive arrays are parallel with null', () => {
    const r = parseFhirXml(
      `<Patient ${FHIR}><name><given value="A"/><given><extension url="u"><valueString value="x"/></extension></given><given value="C"/></name></Patient>`,
    )
    expect(r.name).toEqual([{ given: ['A', null, 'C'], _given: [null, { extension: [{ url: 'u', valueString: 'x' }] }, null] }])
  })

  test('a primitive array with only extensions has no value array', () => {
    const r = parseFhirXml(`<Patient ${FHIR}><name><given id="g"/></name></Patient>`)
    expect(r.name).toEqual([{ _given: [{ id: 'g' }] }])
  })

  test('decimals are JSON numbers that keep their precision as written', () => {
    const r = parseFhirXml(
      `<Observation ${FHIR}><status value="final"/><code><text value="x"/></code><valueQuantity><value value="1.50"/></valueQuantity><component><code><text value="y"/></code><valueQuantity><value value="2.5"/></valueQuantity></component></Observation>`,
    )
    expect(JSON.stringify(r.valueQuantity)).toBe('{"value":1.50}')
    expect(r.component[0].valueQuantity.value).toBe(2.5)
    expect(toFhirXml(r)).toContain('<value value="1.50"/>')
  })

  test('resources inside elements are unwrapped', () => {
    const r = parseFhirXml(`<Bundle ${FHIR}><type value="collection"/>
      <entry><resource><Parameters><parameter><name value="p"/><resource><Patient><id value="x"/></Patient></resource></parameter></Parameters></resource></entry>
      <entry><resource><Observation><contained><Patient><id value="c"/></Patient></contained><status value="final"/><code><text value="t"/></code></Observation></resource></entry>
    </Bundle>`)
    expect(r.entry[0].resource.parameter[0].resource).toEqual({ resourceType: 'Patient', id: 'x' })
    expect(r.entry[1].resource.contained).toEqual([{ resourceType: 'Patient', id: 'c' }])
  })

  test('the narrative div is kept verbatim, xml:space and all', () => {
    const div = `${DIV}\n  <p xml:space="preserve">a &amp; b &#39;c&#39;<!-- note --><br/></p>\n</div>`
    const r = parseFhirXml(`<Patient ${FHIR}><text><status value="generated"/>${div}</text></Patient>`)
    expect(r.text.div).toBe(div)
  })

  test('the narrative div is cut from the source as written: line ends, quotes, CDATA', () => {
    const div = `<div xmlns='http://www.w3.org/1999/xhtml'  lang="en">\r\n<p>a<![CDATA[&nbsp;</div>]]></p><div>b</div>\r\n</div>`
    const r = parseFhirXml(`<Patient ${FHIR}>\r\n<text><status value="generated"/>${div}</text></Patient>`)
    expect(r.text.div).toBe(div)
  })

  test('a prefixed div is rewritten with the XHTML namespace as default', () => {
    const r = parseFhirXml(
      `<Patient ${FHIR} xmlns:h="http://www.w3.org/1999/xhtml"><text><status value="generated"/><h:div><h:p class="x">a &lt; b</h:p></h:div></text></Patient>`,
    )
    expect(r.text.div).toBe(`${DIV}<p class="x">a &lt; b</p></div>`)
  })

  test('prefixed FHIR elements and schema attributes are accepted', () => {
    const r = parseFhirXml(
      `<f:Patient xmlns:f="http://hl7.org/fhir" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://hl7.org/fhir x.xsd"><f:gender value="male" xml:space="preserve"/></f:Patient>`,
    )
    expect(r).toEqual({ resourceType: 'Patient', gender: 'male' })
  })

  test('attribute values keep character references and normalize literal whitespace', () => {
    const r = parseFhirXml(`<Patient ${FHIR}><name><text value="a&#10;b\tc&amp;d"/></name></Patient>`)
    expect(r.name[0].text).toBe('a\nb c&d')
  })
})

describe('toFhirXml', () => {
  test('writes elements in definition order, choice types with their suffix, attributes for id and url', () => {
    const xml = toFhirXml({
      resourceType: 'Observation',
      valueQuantity: { value: 5.0, unit: 'mg' },
      code: { text: 'x' },
      status: 'final',
      extension: [{ url: 'http://e.org', id: 'e1', valueBoolean: false }],
      id: 'o1',
    })
    expect(xml).toBe(
      `<?xml version="1.0" encoding="UTF-8"?><Observation ${FHIR}><id value="o1"/><extension id="e1" url="http://e.org"><valueBoolean value="false"/></extension><status value="final"/><code><text value="x"/></code><valueQuantity><value value="5"/><unit value="mg"/></valueQuantity></Observation>`,
    )
  })

  test('escapes attribute values so they read back unchanged', () => {
    const text = 'line 1\r\nline\t2 <b>&"\''
    const r = { resourceType: 'Patient', name: [{ text }] }
    expect(parseFhirXml(toFhirXml(r))).toEqual(r)
  })

  test('a div without its namespace gets it', () => {
    const xml = toFhirXml({ resourceType: 'Patient', text: { status: 'generated', div: '<div><p>x</p></div>' } })
    expect(parseFhirXml(xml).text.div).toBe(`${DIV}<p>x</p></div>`)
  })

  test('pretty output reads back the same', () => {
    const r = {
      resourceType: 'Patient',
      id: 'p',
      name: [{ given: ['a', 'b'], _given: [null, { id: 'x' }] }],
      text: { status: 'generated', div: `${DIV}x</div>` },
    }
    const xml = toFhirXml(r, { pretty: true })
    expect(xml).toContain('\n  <id value="p"/>\n')
    expect(parseFhirXml(xml)).toEqual(r)
  })

  test('rejects what XML cannot carry', () => {
    expect(appError(() => toFhirXml({ resourceType: 'Patient', foo: 1 })).issues[0].expression).toEqual(['Patient.foo'])
    expect(appError(() => toFhirXml({ resourceType: 'Patient', _name: [{}] })).issues[0].expression).toEqual(['Patient._name'])
    expect(appError(() => toFhirXml({ resourceType: 'Nope' })).category).toBe('invalid')
    expect(appError(() => toFhirXml({ resourceType: 'Patient', gender: 'a\u0001' })).issues[0].expression).toEqual(['Patient.gender'])
    const div = appError(() =>
      toFhirXml({ resourceType: 'Patient', text: { status: 'generated', div: `${DIV}</div></text><active value="true"/><text>${DIV}` } }),
    )
    expect(div.issues[0].expression).toEqual(['Patient.text.div'])
  })
})

describe('hostile and non-FHIR XML', () => {
  test('a DOCTYPE is refused before parsing', () => {
    const err = appError(() => parseFhirXml(`<?xml version="1.0"?><!DOCTYPE Patient SYSTEM "file:///etc/passwd"><Patient ${FHIR}/>`))
    expect(err.status).toBe(400)
    expect(err.issues[0].code).toBe('security')
  })

  test('billion laughs is refused before any expansion', () => {
    const lol = Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i};`.repeat(10)}">`).join('')
    const xml = `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol0 "lol">${lol}]><Patient ${FHIR}><id value="&lol9;"/></Patient>`
    const err = appError(() => parseFhirXml(xml))
    expect(err.category).toBe('invalid')
    expect(err.issues[0].code).toBe('security')
  })

  test('malformed XML is invalid', () => {
    const cases = [
      `<Patient ${FHIR}><id value="x"></Patient>`, // unclosed
      `<Patient ${FHIR}><id value="x"/></Observation>`, // mismatched end tag
      `<Patient ${FHIR}><id value=x/></Patient>`, // unquoted attribute
      `<Patient ${FHIR}><id value="a<b"/></Patient>`, // '<' in attribute
      `<Patient ${FHIR}><id value="&nbsp;"/></Patient>`, // entity not defined without a DTD
      `<Patient ${FHIR}><id value="a" value="b"/></Patient>`, // duplicate attribute
      `<Patient ${FHIR}/><Patient ${FHIR}/>`, // two roots
      `hello <Patient ${FHIR}/>`, // text outside the root
      `<Patient ${FHIR}><!-- unterminated </Patient>`,
      `<Patient ${FHIR}><text><status value="generated"/>${DIV}<p></div></text></Patient>`,
      '',
      // What XMLValidator lets through and the reader refuses itself:
      `<Patient ${FHIR}/>junk`, // text after a root written as <x/>
      `<Patient ${FHIR}></Patient><![CDATA[x]]>`, // CDATA outside the root
      `<Patient ${FHIR}><id value="&constructor;"/></Patient>`, // only the five XML entities exist
      `<Patient ${FHIR}><text><status value="generated"/>${DIV}a&nbsp;b</div></text></Patient>`, // inside the raw narrative
      `<Patient ${FHIR}><text><status value="generated"/>${DIV}<p title="a<b">x</p></div></text></Patient>`,
    ]
    for (const xml of cases) {
      const err = appError(() => parseFhirXml(xml))
      expect(err.category).toBe('invalid')
      expect(err.issues[0].code).toBe('structure')
    }
  })

  test('non-FHIR XML names the element path', () => {
    const path = (xml: string) => appError(() => parseFhirXml(xml)).issues[0].expression
    expect(path(`<Patient xmlns="http://example.org"/>`)).toEqual(['Patient'])
    expect(path(`<Patient/>`)).toEqual(['Patient'])
    expect(path(`<Foo ${FHIR}/>`)).toEqual(['Foo'])
    expect(path(`<HumanName ${FHIR}/>`)).toEqual(['HumanName'])
    expect(path(`<Patient ${FHIR}><foo value="x"/></Patient>`)).toEqual(['Patient.foo'])
    expect(path(`<Patient ${FHIR}><name/><name><foo/></name></Patient>`)).toEqual(['Patient.name[1].foo'])
    expect(path(`<Patient ${FHIR}><x:active xmlns:x="urn:x" value="true"/></Patient>`)).toEqual(['Patient.active'])
    expect(path(`<Patient ${FHIR}><active value="yes"/></Patient>`)).toEqual(['Patient.active'])
    expect(path(`<Patient ${FHIR}><active value="true"/><active value="false"/></Patient>`)).toEqual(['Patient.active'])
    expect(path(`<Patient ${FHIR}><deceasedBoolean value="true"/><deceasedDateTime value="2000"/></Patient>`)).toEqual(['Patient.deceasedDateTime'])
    expect(path(`<Patient ${FHIR}><gender value="male" foo="x"/></Patient>`)).toEqual(['Patient.gender.@foo'])
    expect(path(`<Patient ${FHIR}><active>true</active></Patient>`)).toEqual(['Patient.active'])
    expect(path(`<Patient ${FHIR}><contained><Foo/></contained></Patient>`)).toEqual(['Patient.contained[0]'])
    expect(path(`<Patient ${FHIR}><text><status value="generated"/><div/></text></Patient>`)).toEqual(['Patient.text.div'])
  })

  test('nesting deeper than maxDepth is refused', () => {
    const nested = (n: number) => `<Patient ${FHIR}>${'<extension url="u">'.repeat(n)}${'</extension>'.repeat(n)}</Patient>`
    expect(appError(() => parseFhirXml(nested(150))).category).toBe('invalid')
    expect(appError(() => parseFhirXml(nested(20), { maxDepth: 10 })).category).toBe('invalid')
    expect(parseFhirXml(nested(150), { maxDepth: 200 }).resourceType).toBe('Patient')
  })
})

describe('round trips over the shared example data', () => {
  for (const sub of ['r4-examples', 'us-core-examples']) {
    test(`${sub}: JSON -> XML -> JSON is identical`, () => {
      const dir = dataDir(sub)
      const names = files(dir, '.json')
      const failures: string[] = []
      for (const [i, name] of names.entries()) {
        const json = readJson(join(dir, name))
        try {
          const back = parseFhirXml(toFhirXml(json, { pretty: i % 2 === 0 }))
          if (!Bun.deepEquals(back, json, true)) failures.push(`${name}: differs`)
        } catch (err) {
          failures.push(`${name}: ${(err as Error).message}`)
        }
      }
      console.log(`${sub}: ${names.length - failures.length} of ${names.length} files round-tripped`)
      expect(failures).toEqual([])
    }, 120_000) // CPU bound: 17.6 s of the suite's 30 under load
  }

  // STU3 content in the R4 folder: R4 replaced StructureDefinition.contextType by context.type.
  const notR4: Record<string, string> = { 'myconsent-ext.xml': 'StructureDefinition.contextType' }
  // Where the test case and the published example are different revisions of the same resource.
  const revisionDiffs: Record<string, string[]> = {
    'observation-example.xml': ['extension'],
    'patient-example-period.xml': ['identifier[0].period.end'],
    // The narrative reads `= 'n/a'` here and `= '2501-813-16'` in the published example.
    'medicationdispenseexample8.xml': ['text.div'],
  }

  test('fhir-test-cases r4/*.xml parse, read back the same, and match their JSON twins', () => {
    const dir = dataDir('fhir-test-cases/r4')
    const examples = dataDir('r4-examples')
    const names = files(dir, '.xml')
    let twins = 0
    for (const name of names) {
      const xml = readFileSync(join(dir, name), 'utf8')
      if (notR4[name]) {
        expect(appError(() => parseFhirXml(xml)).issues[0].expression).toEqual([notR4[name]])
        continue
      }
      const r = parseFhirXml(xml)
      expect(parseFhirXml(toFhirXml(r))).toEqual(r)
      const twin = join(examples, `${r.resourceType}-${r.id}.json`)
      if (existsSync(twin)) {
        twins++
        expect({ name, diffs: diffPaths(canonical(r), canonical(readJson(twin))) }).toEqual({ name, diffs: revisionDiffs[name] ?? [] })
      }
    }
    console.log(`fhir-test-cases: ${names.length - Object.keys(notR4).length} of ${names.length} XML files parsed, ${twins} compared with JSON twins`)
    expect(twins).toBeGreaterThan(0)
  })
})

test('speed: parse and serialize a large Synthea bundle (printed, not asserted)', () => {
  const dir = dataDir('synthea-smart')
  const biggest = files(dir, '.json')
    .map((f) => join(dir, f))
    .reduce((a, b) => (Bun.file(a).size >= Bun.file(b).size ? a : b))
  const json = readJson(biggest)
  const xml = toFhirXml(json)
  const mb = Buffer.byteLength(xml) / 1e6
  const rate = (fn: () => unknown) => {
    for (let i = 0; i < 3; i++) fn() // warm up the JIT and the definition tables
    const runs = 10
    const start = performance.now()
    for (let i = 0; i < runs; i++) fn()
    return (mb * runs) / ((performance.now() - start) / 1000)
  }
  const parse = rate(() => parseFhirXml(xml))
  const write = rate(() => toFhirXml(json))
  console.log(`XML speed over ${mb.toFixed(2)} MB (${json.entry.length} entries): parse ${parse.toFixed(1)} MB/s, serialize ${write.toFixed(1)} MB/s`)
  expect(parseFhirXml(xml)).toEqual(json)
}, 120_000) // CPU bound: 22.6 s of the suite's 30 under load

/** The resource with each narrative div reduced to its XHTML content, so `'` and `&#39;` compare equal. */
function canonical(value: any): any {
  if (Array.isArray(value)) return value.map(canonical)
  if (value === null || typeof value !== 'object') return value
  const out: any = {}
  for (const [k, v] of Object.entries(value)) out[k] = k === 'div' && typeof v === 'string' ? xhtmlContent(readXml(v, { maxDepth: 1000 })) : canonical(v)
  return out
}

function xhtmlContent(el: XmlElement): string {
  const attrs = el.attrs
    .filter((a) => a.ns !== XMLNS_NS)
    .map((a) => ` ${a.qname}=${JSON.stringify(a.value)}`)
    .sort()
    .join('')
  const inner = el.children.map((c) => (typeof c === 'string' ? c.replace(/\s+/g, ' ') : xhtmlContent(c))).join('')
  return `<${el.name}${attrs}>${inner}</${el.name}>`
}

/** Paths where two JSON values differ. */
function diffPaths(a: any, b: any, path = ''): string[] {
  if (Bun.deepEquals(a, b, true)) return []
  if (a && b && typeof a === 'object' && typeof b === 'object' && Array.isArray(a) === Array.isArray(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)])
    return [...keys].flatMap((k) => diffPaths(a[k], b[k], Array.isArray(a) ? `${path}[${k}]` : path ? `${path}.${k}` : k))
  }
  return [path]
}
