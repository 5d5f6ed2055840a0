// Where the shared test data lives: ../shared/data beside the checkout (FHIR_TEST_DATA overrides).
// Tests that need it fail loudly when it is absent rather than passing on nothing.
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'

export const DATA_DIR = process.env.FHIR_TEST_DATA ?? resolve(import.meta.dir, '..', '..', 'shared', 'data')

/** Absolute path of a file or folder of the shared data; throws when it is missing. */
export function dataPath(...parts: string[]): string {
  const p = join(DATA_DIR, ...parts)
  if (!existsSync(p)) throw new Error(`Test data not found: ${p} (set FHIR_TEST_DATA to the shared/data folder)`)
  return p
}
