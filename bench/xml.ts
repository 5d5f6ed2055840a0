// XML format benchmark: FHIR XML serialize (JSON -> toFhirXml) and parse (parseFhirXml) speed over every
// Synthea bundle in ../shared/data/synthea-smart, in MB/s of XML and microseconds per resource. No server.
// Usage: bun run bench/xml.ts [rounds]
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseFhirJson } from '../shared/fhir/format/json'
import { parseFhirXml } from '../shared/fhir/format/xml-parse'
import { toFhirXml } from '../shared/fhir/format/xml-write'
import { dataPath } from '../tests/data'

const rounds = Number(process.argv[2] ?? 3)
const dir = dataPath('synthea-smart')
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((f) => join(dir, f))
if (files.length === 0) throw new Error(`No Synthea bundles in ${dir}`)

interface Totals {
  jsonBytes: number
  xmlBytes: number
  resources: number
  serializeMs: number
  parseMs: number
}

/** One pass over every bundle: each read as FHIR JSON (untimed), written as XML, parsed back. */
function pass(check: boolean): Totals {
  const t: Totals = { jsonBytes: 0, xmlBytes: 0, resources: 0, serializeMs: 0, parseMs: 0 }
  for (const file of files) {
    const text = readFileSync(file, 'utf8')
    const bundle = parseFhirJson(text)
    let start = performance.now()
    const xml = toFhirXml(bundle)
    t.serializeMs += performance.now() - start
    start = performance.now()
    const back = parseFhirXml(xml)
    t.parseMs += performance.now() - start
    if (check && !Bun.deepEquals(back, bundle)) throw new Error(`${file}: JSON -> XML -> JSON changed the bundle`)
    t.jsonBytes += Buffer.byteLength(text)
    t.xmlBytes += Buffer.byteLength(xml)
    t.resources += 1 + (bundle.entry?.length ?? 0) // the Bundle and its entries' resources
  }
  return t
}

// Warm-up: the JIT and the definition tables; also checks the round trip once.
pass(true)
Bun.gc(true)

const sum: Totals = { jsonBytes: 0, xmlBytes: 0, resources: 0, serializeMs: 0, parseMs: 0 }
for (let i = 0; i < rounds; i++) {
  const t = pass(false)
  for (const k of Object.keys(sum) as (keyof Totals)[]) sum[k] += t[k]
}

const mb = (bytes: number) => bytes / 1e6
const perRound = (n: number) => n / rounds
const xmlMb = mb(sum.xmlBytes)
const mbPerSecond = (ms: number) => xmlMb / (ms / 1000)
const microsPerResource = (ms: number) => (ms * 1000) / sum.resources

console.log(
  `XML over ${files.length} Synthea bundles: ${mb(perRound(sum.jsonBytes)).toFixed(1)} MB JSON -> ${mb(perRound(sum.xmlBytes)).toFixed(1)} MB XML, ` +
    `${perRound(sum.resources)} resources, ${rounds} rounds after a warm-up`,
)
console.log(`serialize (toFhirXml):   ${mbPerSecond(sum.serializeMs).toFixed(1)} MB/s of XML, ${microsPerResource(sum.serializeMs).toFixed(1)} µs per resource`)
console.log(`parse     (parseFhirXml): ${mbPerSecond(sum.parseMs).toFixed(1)} MB/s of XML, ${microsPerResource(sum.parseMs).toFixed(1)} µs per resource`)
