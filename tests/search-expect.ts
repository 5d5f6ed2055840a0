// What the search tests compute their expected answers with, and how they read search responses.
import { readJson, type TestServer } from './harness'

/** The server's string normalisation: accents removed, upper case. */
export const norm = (v: string) => v.normalize('NFD').replace(/\p{Mn}/gu, '').toUpperCase()

/** `Type/id` of resources, sorted. */
export const keys = (resources: any[]) => resources.map((r) => `${r.resourceType}/${r.id}`).sort()

export const hasCoding = (cc: any, system: string | undefined, code: string) =>
  (cc?.coding ?? []).some((c: any) => c.code === code && (system === undefined || c.system === system))

/** GET under /fhir that must answer 200; the JSON body. */
export async function getOk(s: TestServer, path: string, headers: Record<string, string> = {}): Promise<any> {
  const res = await s.fhirFetch(path, { headers })
  if (res.status !== 200) throw new Error(`GET /fhir${path}: ${res.status} ${await res.text()}`)
  return readJson(res)
}

/** A link of the bundle as a path under /fhir. */
export function linkPath(bundle: any, relation: string): string | undefined {
  const url = bundle.link?.find((l: any) => l.relation === relation)?.url
  if (!url) return undefined
  const u = new URL(url)
  return u.pathname.replace(/^\/fhir/, '') + u.search
}
