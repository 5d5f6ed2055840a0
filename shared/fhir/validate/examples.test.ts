// Real data written by others validates: the official R4 examples, the US Core examples and every
// Synthea resource. Reads ../shared/data at run time (FHIR_TEST_DATA overrides); fails when absent.
import { DATA_DIR } from '../../../tests/data'
import { describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { validateResource } from './validate'

const DATA = DATA_DIR

function dataDir(name: string): string {
  const dir = join(DATA, name)
  if (!existsSync(dir)) throw new Error(`Test data missing: ${dir} (set FHIR_TEST_DATA to the shared data folder)`)
  return dir
}

function readJsonFiles(name: string): [string, any][] {
  const dir = dataDir(name)
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
  return files.map((f) => [f, JSON.parse(readFileSync(join(dir, f), 'utf8'))])
}

/** Errors per file, as `path: code` lines, for files that have any. */
function failures(files: [string, any][]): Record<string, string[]> {
  const out: Record<string, string[]> = {}
  for (const [file, resource] of files) {
    const errors = validateResource(resource).filter((i) => i.severity === 'error' || i.severity === 'fatal')
    if (errors.length) out[file] = [...new Set(errors.map((i) => `${i.expression?.[0]?.replace(/\[\d+\]/g, '[]')}: ${i.code}`))]
  }
  return out
}

describe('official examples', () => {
  test('every R4 example validates, except the ones that are genuinely invalid', () => {
    const files = readJsonFiles('r4-examples')
    expect(files.length).toBeGreaterThan(700)
    expect(failures(files)).toEqual({
      // The core package's own ImplementationGuide omits name and status (both 1..1).
      'ig-r4.json': ['ImplementationGuide.name: required', 'ImplementationGuide.status: required'],
      // Nested items of this Questionnaire have no linkId (Questionnaire.item.linkId is 1..1).
      'Questionnaire-qs1.json': [
        'Questionnaire.item[].item[].linkId: required',
        'Questionnaire.item[].item[].item[].linkId: required',
        'Questionnaire.item[].item[].item[].item[].linkId: required',
      ],
    })
  })

  test('every US Core example validates, except the ones that are genuinely invalid', () => {
    const files = readJsonFiles('us-core-examples')
    expect(files.length).toBe(228)
    expect(failures(files)).toEqual({
      // text has status but no div (Narrative.div is 1..1).
      'diagnosticreport-cbc.json': ['DiagnosticReport.text.div: required'],
    })
  })
})

describe('Synthea', () => {
  const bundles = readJsonFiles('synthea-smart')

  test('every transaction bundle validates as a whole', () => {
    expect(bundles.length).toBe(47)
    expect(failures(bundles)).toEqual({})
  })

  test('every entry resource validates on its own, with throughput', () => {
    const resources = bundles.flatMap(([, b]) => b.entry.map((e: any) => e.resource))
    expect(resources.length).toBe(13491)
    // Best of a few rounds: the first compiles the plans and warms the JIT.
    let ms = Infinity
    for (let round = 0; round < 5; round++) {
      const start = performance.now()
      let issues = 0
      for (const r of resources) issues += validateResource(r).length
      ms = Math.min(ms, performance.now() - start)
      expect(issues).toBe(0)
    }
    console.log(
      `validate: ${resources.length} Synthea resources in ${ms.toFixed(1)} ms = ${Math.round((resources.length / ms) * 1000)} resources/s (one thread)`,
    )
  })
})
