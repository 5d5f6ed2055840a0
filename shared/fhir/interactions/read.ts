// read and vread. https://hl7.org/fhir/R4/http.html#read  https://hl7.org/fhir/R4/http.html#vread
import { AppError } from '../../errors'
import type { StoredVersion } from '../repo/types'
import type { FhirContext, FhirRequest, FhirResponse } from '../request'
import { applySubset, parseSubset } from '../subset'
import { deletedResource, invalidVersion, liveVersion, unknownResource, unknownVersion } from '../resource-errors'
import { etagOf } from './write-response'
import { parseFhirJson } from '../format/json'

const NOT_FOR_READ = ['_count', '_include', '_revinclude', '_sort', '_total', '_contained']

export async function read(req: FhirRequest, ctx: Pick<FhirContext, 'repo'>, type: string, id: string): Promise<FhirResponse> {
  rejectSearchParams(req)
  const stored = liveVersion(await ctx.repo.read(type, id), type, id)
  if (notModified(req, stored)) return { status: 304, etag: etagOf(stored.version), lastModified: stored.lastUpdated }
  return versionResponse(req, stored)
}

export async function vread(req: FhirRequest, ctx: Pick<FhirContext, 'repo'>, type: string, id: string, vid: string): Promise<FhirResponse> {
  rejectSearchParams(req)
  const numeric = /^[0-9]+$/.test(vid)
  const stored = numeric && vid.length <= 9 ? await ctx.repo.vread(type, id, Number(vid)) : undefined
  if (!stored) {
    if (!(await ctx.repo.read(type, id))) throw unknownResource(type, id)
    throw numeric ? unknownVersion(type, id, vid) : invalidVersion(type, id, vid)
  }
  if (stored.deleted) throw deletedResource(stored)
  return versionResponse(req, stored)
}

function versionResponse(req: FhirRequest, stored: StoredVersion): FhirResponse {
  const subset = parseSubset(req.query)
  const res: FhirResponse = { status: 200, etag: etagOf(stored.version), lastModified: stored.lastUpdated }
  if (subset && subset.summary !== 'count') res.resource = applySubset(parseFhirJson(stored.content as string), subset)
  else res.text = stored.content as string
  return res
}

/** If-None-Match with the current ETag, or If-Modified-Since not before the last update: 304. */
function notModified(req: FhirRequest, stored: StoredVersion): boolean {
  const inm = req.headers.ifNoneMatch
  if (inm) return inm.split(',').some((t) => t.trim() === etagOf(stored.version) || t.trim() === `"${stored.version}"` || t.trim() === '*')
  const ims = req.headers.ifModifiedSince
  if (ims) {
    const since = Date.parse(ims)
    // HTTP dates have second precision.
    if (!Number.isNaN(since)) return Math.floor(stored.lastUpdated.getTime() / 1000) * 1000 <= since
  }
  return false
}

function rejectSearchParams(req: FhirRequest): void {
  for (const p of NOT_FOR_READ) if (req.query.has(p)) throw new AppError('invalid', `HAPI-0384: Invalid query parameter for read operation: ${p}`)
}
