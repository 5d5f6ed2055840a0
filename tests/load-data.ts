// Loads the shared test data into a test server over HTTP, and reads the same files for the expected
// answers. Transactions are not implemented yet, so a Synthea transaction Bundle is loaded by PUTting
// each entry: its client id is the uuid of its `urn:uuid:` fullUrl (a valid FHIR id) and every
// `urn:uuid:X` reference becomes `Type/X`. The R4 examples have fixed ids: PUT Type/id.
// https://hl7.org/fhir/R4/http.html#update
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { dataPath } from './data'
import type { TestServer } from './harness'

export interface Rejected {
  file: string
  key: string
  status: number
  diagnostics: string
}

export interface Loaded {
  /** Every resource the server accepted, by `Type/id`, as sent (the last copy when several files carry it). */
  resources: Map<string, any>
  /** Resources the server rejected as invalid (400/422); they are not on the server. */
  rejected: Rejected[]
  /** Files read. */
  files: string[]
}

const URN_UUID = 'urn:uuid:'

/** The Synthea bundle files in name order, the first `limit` of them (all when undefined). */
export function syntheaFiles(limit?: number): string[] {
  const dir = dataPath('synthea-smart')
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
  if (files.length === 0) throw new Error(`No Synthea bundles in ${dir}`)
  return files.slice(0, limit).map((f) => join(dir, f))
}

/** The resources of one Synthea transaction Bundle, with ids and references rewritten as the server will store them. */
export function readSyntheaBundle(file: string): any[] {
  const bundle = JSON.parse(readFileSync(file, 'utf8'))
  const typeOf = new Map<string, string>()
  for (const e of bundle.entry ?? []) {
    if (typeof e.fullUrl === 'string' && e.fullUrl.startsWith(URN_UUID)) typeOf.set(e.fullUrl, e.resource.resourceType)
  }
  return (bundle.entry ?? []).map((e: any) => {
    if (!typeOf.has(e.fullUrl)) throw new Error(`${file}: entry without a urn:uuid fullUrl: ${e.fullUrl}`)
    const resource = rewriteReferences(e.resource, typeOf)
    resource.id = e.fullUrl.slice(URN_UUID.length)
    return resource
  })
}

function rewriteReferences(node: any, typeOf: Map<string, string>): any {
  if (Array.isArray(node)) return node.map((n) => rewriteReferences(n, typeOf))
  if (node === null || typeof node !== 'object') return node
  const out: any = {}
  for (const [k, v] of Object.entries(node)) {
    if (k === 'reference' && typeof v === 'string' && v.startsWith(URN_UUID)) {
      const type = typeOf.get(v)
      out[k] = type ? `${type}/${v.slice(URN_UUID.length)}` : v
    } else out[k] = rewriteReferences(v, typeOf)
  }
  return out
}

/** The R4 example files (`Type-id.json`, fixed ids). */
export function r4ExampleFiles(): string[] {
  const dir = dataPath('r4-examples')
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
  if (files.length === 0) throw new Error(`No R4 examples in ${dir}`)
  return files.map((f) => join(dir, f))
}

/** PUTs the first `limit` Synthea bundles (all when undefined). Any rejection is an error: the data is valid. */
export async function loadSynthea(s: TestServer, limit?: number, concurrency = 8): Promise<Loaded> {
  const files = syntheaFiles(limit)
  const items = files.flatMap((file) => readSyntheaBundle(file).map((resource) => ({ file, resource })))
  const loaded = await putAll(s, items, concurrency)
  if (loaded.rejected.length > 0) {
    const r = loaded.rejected[0]
    throw new Error(`${loaded.rejected.length} Synthea resources rejected, first ${r.key} (${r.file}): ${r.status} ${r.diagnostics}`)
  }
  return { ...loaded, files }
}

/** PUTs every R4 example; those the server rejects as invalid are skipped and listed in `rejected`. */
export async function loadR4Examples(s: TestServer, concurrency = 8): Promise<Loaded> {
  const files = r4ExampleFiles()
  const items = files.map((file) => ({ file, resource: JSON.parse(readFileSync(file, 'utf8')) }))
  return { ...(await putAll(s, items, concurrency)), files }
}

// PUT Type/id with at most `concurrency` requests in flight; copies of one resource (Synthea bundles
// share Organizations and Practitioners) go one after another, in file order.
async function putAll(s: TestServer, items: { file: string; resource: any }[], concurrency: number): Promise<Omit<Loaded, 'files'>> {
  const resources = new Map<string, any>()
  const rejected: Rejected[] = []
  const chains = new Map<string, { file: string; resource: any }[]>()
  for (const item of items) {
    const key = `${item.resource.resourceType}/${item.resource.id}`
    const chain = chains.get(key)
    if (chain) chain.push(item)
    else chains.set(key, [item])
  }
  const queue = [...chains.entries()]
  let next = 0
  const worker = async () => {
    while (next < queue.length) {
      const [key, chain] = queue[next++]
      for (const { file, resource } of chain) {
        const res = await s.fhirFetch(`/${key}`, { method: 'PUT', json: resource })
        if (res.status === 200 || res.status === 201) {
          await res.arrayBuffer()
          resources.set(key, resource)
        } else if (res.status === 400 || res.status === 422) {
          const body: any = await res.json().catch(() => ({}))
          const diagnostics = (body.issue ?? []).map((i: any) => i.diagnostics).join('; ')
          rejected.push({ file, key, status: res.status, diagnostics })
        } else {
          throw new Error(`PUT ${key} (${file}): unexpected ${res.status} ${await res.text()}`)
        }
      }
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return { resources, rejected }
}

/** The accepted resources of one type. */
export function ofType(loaded: Loaded, type: string): any[] {
  return [...loaded.resources.values()].filter((r) => r.resourceType === type)
}

/** Several loads as one (a resource in two is the later one's). */
export function merge(...loads: Loaded[]): Loaded {
  const resources = new Map<string, any>()
  for (const l of loads) for (const [k, v] of l.resources) resources.set(k, v)
  return { resources, rejected: loads.flatMap((l) => l.rejected), files: loads.flatMap((l) => l.files) }
}
