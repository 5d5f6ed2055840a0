// PostgreSQL text cannot hold a NUL byte (SQLSTATE 22021), so one in a path segment, a query value or
// a JSON string of the body would fail deep in a query as a 500. The edge refuses it first: 400
// invalid_data naming the parameter (the path parameter's name, the query name, the body's top-level field).
import { invalidData } from '../../shared/patients/api-error'

const NUL = '\u0000'

export function refuseNulBytes(params: Record<string, string>, url: URL, body: unknown): void {
  for (const [name, value] of Object.entries(params)) if (value.includes(NUL)) throw nul(name)
  // A wildcard route (GET /connections/{id or base URL}) gets its id still percent-encoded.
  if (/%00/.test(url.pathname)) throw nul('id')
  const query = url.searchParams
  for (const [name, value] of query) if (name.includes(NUL) || value.includes(NUL)) throw nul(name.replaceAll(NUL, ''))
  if (body && typeof body === 'object' && !Array.isArray(body)) {
    for (const [name, value] of Object.entries(body)) if (name.includes(NUL) || holdsNul(value)) throw nul(name.replaceAll(NUL, ''))
  } else if (holdsNul(body)) throw nul('body')
}

function holdsNul(v: unknown): boolean {
  if (typeof v === 'string') return v.includes(NUL)
  if (Array.isArray(v)) return v.some(holdsNul)
  if (v && typeof v === 'object') return Object.entries(v).some(([k, x]) => k.includes(NUL) || holdsNul(x))
  return false
}

const nul = (param: string) => invalidData(param, `${param} contains a NUL byte (\\u0000), which no field accepts`)
