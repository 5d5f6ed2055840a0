// Bulk Data over HTTP for the tests: kick-off, polling the status URL to its end, reading NDJSON files.
import { expect } from 'bun:test'
import { ADMIN_KEY, type TestServer } from './harness'

export const ASYNC = { prefer: 'respond-async' }

/** Kicks off and returns the status URL (expects 202 with Content-Location). */
export async function kickOff(s: TestServer, path: string, init: RequestInit & { json?: unknown; key?: string | null } = {}): Promise<string> {
  const res = await s.fhirFetch(path, { ...init, headers: { ...ASYNC, ...(init.headers as Record<string, string>) } })
  const body = await res.json()
  if (res.status !== 202) throw new Error(`kick-off ${path}: ${res.status} ${JSON.stringify(body)}`)
  const location = res.headers.get('content-location')
  expect(location).toBeTruthy()
  return location as string
}

/** GETs the status URL until it is no longer 202; returns the final response and every X-Progress seen. */
export async function pollStatus(statusUrl: string, key: string = ADMIN_KEY, timeoutMs = 60_000): Promise<{ res: Response; progress: string[] }> {
  const progress: string[] = []
  const until = Date.now() + timeoutMs
  for (;;) {
    const res = await fetch(statusUrl, { headers: { authorization: `Bearer ${key}` } })
    if (res.status !== 202) return { res, progress }
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/)
    progress.push(res.headers.get('x-progress') ?? '')
    await res.arrayBuffer()
    if (Date.now() > until) throw new Error(`${statusUrl} still 202 after ${timeoutMs} ms`)
    await Bun.sleep(100)
  }
}

/** Waits for the job to complete and returns its manifest. */
export async function manifestOf(statusUrl: string, key: string = ADMIN_KEY): Promise<any> {
  const { res } = await pollStatus(statusUrl, key)
  const body = await res.json()
  if (res.status !== 200) throw new Error(`${statusUrl}: ${res.status} ${JSON.stringify(body)}`)
  expect(res.headers.get('content-type')).toStartWith('application/json')
  return body
}

/** The lines of an NDJSON file, parsed. */
export async function readNdjson(url: string, key: string = ADMIN_KEY): Promise<any[]> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } })
  const text = await res.text()
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${text}`)
  expect(res.headers.get('content-type')).toBe('application/fhir+ndjson')
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l))
}

/** Every resource of a manifest's output files, by type (files of one type concatenated). */
export async function exportedByType(manifest: any, key: string = ADMIN_KEY): Promise<Map<string, any[]>> {
  const out = new Map<string, any[]>()
  for (const o of manifest.output) {
    const lines = await readNdjson(o.url, key)
    expect(lines.length).toBe(o.count)
    for (const r of lines) expect(r.resourceType).toBe(o.type)
    out.set(o.type, [...(out.get(o.type) ?? []), ...lines])
  }
  return out
}
