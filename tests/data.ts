// Where the shared test data lives: ../shared/data beside the checkout (FHIR_TEST_DATA overrides).
// Tests that need it fail loudly when it is absent rather than passing on nothing.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'

export const DATA_DIR = process.env.FHIR_TEST_DATA ?? resolve(import.meta.dir, '..', '..', 'shared', 'data')

/** Absolute path of a file or folder of the shared data; throws when it is missing. */
export function dataPath(...parts: string[]): string {
  const p = join(DATA_DIR, ...parts)
  if (!existsSync(p)) throw new Error(`Test data not found: ${p} (set FHIR_TEST_DATA to the shared/data folder)`)
  return p
}

/** The `n` largest synthea-smart transactions as one Bundle; each copy's placeholders renamed so fullUrls stay unique. */
export function largestSyntheaBundles(n: number): any {
  const dir = dataPath('synthea-smart')
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => join(dir, f))
    .sort((a, b) => statSync(b).size - statSync(a).size)
    .slice(0, n)
  const entry = files.flatMap((f) => {
    const renamed = new Map<string, string>()
    const text = readFileSync(f, 'utf8').replace(/urn:uuid:[0-9a-fA-F-]{36}/g, (u) => {
      let r = renamed.get(u)
      if (!r) renamed.set(u, (r = `urn:uuid:${crypto.randomUUID()}`))
      return r
    })
    return JSON.parse(text).entry
  })
  return { resourceType: 'Bundle', type: 'transaction', entry }
}

/** The error `f` throws (a test fails when it throws nothing). */
export function thrown<E = Error>(f: () => unknown): E {
  try {
    f()
  } catch (e) {
    return e as E
  }
  throw new Error('expected an error')
}
