// Test data for the export tests: one Synthea patient loaded through a transaction Bundle, and the
// paging of an export Bundle (FHIR $everything or the patient API) to its end in either direction.
import { expect } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { dataPath } from './data'
import type { TestServer } from './harness'

export interface LoadedPatient {
  /** Server id of the Patient. */
  patientId: string
  /** `Type/id` of every resource of the Bundle, as stored. */
  refs: string[]
}

/** Posts one synthea-smart transaction Bundle; returns where each entry was stored. */
export async function loadSyntheaPatient(s: TestServer, file: string): Promise<LoadedPatient> {
  const bundle = JSON.parse(readFileSync(join(dataPath('synthea-smart'), file), 'utf8'))
  const res = await s.fhirFetch('', { method: 'POST', json: bundle })
  expect(res.status).toBe(200)
  const body: any = await res.json()
  const refs = body.entry.map((e: any) => String(e.response.location).split('/_history/')[0])
  const patient = refs.find((r: string) => r.startsWith('Patient/')) as string
  return { patientId: patient.slice('Patient/'.length), refs }
}

export interface Paged {
  refs: string[]
  pages: any[]
}

/** Follows `relation` links from `first` to the end; `get` fetches a link URL. */
export async function pageAll(first: any, relation: 'next' | 'previous', get: (url: string) => Promise<any>): Promise<Paged> {
  const pages = [first]
  let page = first
  for (let i = 0; i < 1000; i++) {
    const url = page.link.find((l: any) => l.relation === relation)?.url
    if (!url) break
    page = await get(url)
    pages.push(page)
  }
  const ordered = relation === 'next' ? pages : [...pages].reverse()
  return { pages, refs: ordered.flatMap((p) => (p.entry ?? []).map((e: any) => `${e.resource.resourceType}/${e.resource.id}`)) }
}

export const linkOf = (bundle: any, relation: string): string | undefined => bundle.link.find((l: any) => l.relation === relation)?.url
