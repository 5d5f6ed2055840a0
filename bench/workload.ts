// What the read benchmarks send: Synthea patients created through the API, and wrk scripts that cycle
// through a list of request paths.
import { writeFileSync } from 'node:fs'
import { BENCH_KEY } from './server'
import { syntheaResources } from './synthea'

/** Creates every Synthea patient through POST {base}/fhir/Patient; their server ids. */
export async function seedPatients(base: string): Promise<string[]> {
  const ids: string[] = []
  for (const p of syntheaResources().filter((r) => r.resourceType === 'Patient')) {
    const { id: _drop, ...body } = p
    const res = await fetch(`${base}/fhir/Patient`, {
      method: 'POST',
      headers: { authorization: `Bearer ${BENCH_KEY}`, 'content-type': 'application/fhir+json' },
      body: JSON.stringify(body),
    })
    if (res.status !== 201) throw new Error(`seed failed: ${res.status} ${await res.text()}`)
    ids.push(((await res.json()) as { id: string }).id)
  }
  return ids
}

/** Writes a wrk script that GETs `paths` in turn; returns its file name. */
export function pathsScript(file: string, paths: string[]): string {
  writeFileSync(
    file,
    `paths = {${paths.map((p) => JSON.stringify(p)).join(',')}}\nn = 0\nrequest = function()\n  n = n + 1\n  return wrk.format("GET", paths[(n % #paths) + 1])\nend\n`,
  )
  return file
}
