// The answer to create, update and patch, shaped by `Prefer: return=` as HAPI does (default
// representation). https://hl7.org/fhir/R4/http.html#ins-req
import type { StoredVersion } from '../repo/types'
import { type StorageCode, storageOutcome } from '../outcome'
import type { FhirContext, FhirRequest, FhirResponse } from '../request'

export type PreferReturn = 'minimal' | 'representation' | 'OperationOutcome'

export function preferReturn(req: FhirRequest): PreferReturn | undefined {
  const m = /(?:^|[;,\s])return\s*=\s*"?(minimal|representation|OperationOutcome)"?/i.exec(req.headers.prefer ?? '')
  if (!m) return undefined
  const v = m[1].toLowerCase()
  return v === 'minimal' ? 'minimal' : v === 'representation' ? 'representation' : 'OperationOutcome'
}

export const etagOf = (version: number) => `W/"${version}"`

export function versionUrl(ctx: Pick<FhirContext, 'baseUrl'>, v: { type: string; id: string; version: number }): string {
  return `${ctx.baseUrl}/${v.type}/${v.id}/_history/${v.version}`
}

export function writeResponse(
  req: FhirRequest,
  ctx: Pick<FhirContext, 'baseUrl'>,
  status: number,
  stored: StoredVersion,
  code: StorageCode,
  diagnostics: string,
  opts: { location?: boolean } = {},
): FhirResponse {
  const url = versionUrl(ctx, stored)
  const res: FhirResponse = {
    status,
    etag: etagOf(stored.version),
    lastModified: stored.lastUpdated,
    contentLocation: url,
    location: opts.location ? url : undefined,
  }
  switch (preferReturn(req) ?? 'representation') {
    case 'minimal':
      break
    case 'OperationOutcome':
      res.resource = storageOutcome(code, diagnostics)
      break
    default:
      res.text = stored.content ?? undefined
  }
  return res
}

export const tookMs = (start: number) => `Took ${Math.max(0, Math.round(performance.now() - start))}ms.`
