// The FHIR router: a parsed request to the interaction that serves it. The HTTP edge and the Bundle
// worker both go through here. https://hl7.org/fhir/R4/http.html
import { AppError } from '../errors'
import { processBundle } from './bundle/process'
import { isResourceType } from './definitions/resource-types'
import { assertResourceType } from './ids'
import { capabilities } from './interactions/capabilities'
import { create } from './interactions/create'
import { conditionalDelete, remove } from './interactions/delete'
import { history, historyBundle } from './interactions/history'
import { conditionalPatch, patch } from './interactions/patch'
import { read, vread } from './interactions/read'
import { searchCompartment, searchPage, searchSystem, searchType } from './interactions/search'
import { conditionalUpdate, update } from './interactions/update'
import { validateOperation } from './operations/validate'
import { decodePageToken } from './paging'
import type { FhirContext, FhirRequest, FhirResponse } from './request'

export type { Scope } from '../auth/api-keys'
import type { Scope } from '../auth/api-keys'

/** The API-key scope a request needs: reads need `read`, writes `write`; admin operations come later. */
export function requiredScope(req: FhirRequest): Scope {
  if (req.method === 'GET' || req.method === 'HEAD') return 'read'
  const last = req.path[req.path.length - 1] ?? ''
  if (last === '$validate' || last === '_search') return 'read'
  return 'write'
}

export async function route(req: FhirRequest, ctx: FhirContext): Promise<FhirResponse> {
  const [first, second, third, fourth, ...rest] = req.path
  const m = req.method === 'HEAD' ? 'GET' : req.method
  if (first === undefined) {
    if (m === 'GET' && req.query.has('_getpages')) return page(req, ctx)
    if (m === 'GET') return searchSystem(req, ctx)
    if (m === 'POST') return processBundle(ctx, req.body, { prefer: req.headers.prefer, maxEntries: ctx.config.maxBundleEntries })
    return unsupported(req)
  }
  if (first === 'metadata' && second === undefined && m === 'GET') return capabilities(ctx)
  if (first === '_history' && second === undefined && m === 'GET') return history(req, ctx)
  if (first.startsWith('$') || first.startsWith('_') || first === 'metadata') return unsupported(req)
  assertResourceType(first)
  const type = first
  if (second === undefined) {
    if (m === 'POST') return create(req, ctx, type)
    if (m === 'GET') return searchType(req, ctx, type)
    // Conditional update, delete and patch: the query is the match URL. https://hl7.org/fhir/R4/http.html#cond-update
    if (req.query.size > 0) {
      if (m === 'PUT') return conditionalUpdate(req, ctx, type)
      if (m === 'DELETE') return conditionalDelete(req, ctx, type)
      if (m === 'PATCH') return conditionalPatch(req, ctx, type)
    }
    return unsupported(req)
  }
  if (second === '_search' && third === undefined && (m === 'POST' || m === 'GET')) return searchType(req, ctx, type)
  if (second === '_history' && third === undefined && m === 'GET') return history(req, ctx, type)
  if (second === '$validate' && third === undefined && (m === 'POST' || m === 'GET')) return validateOperation(req, ctx, type)
  if (second.startsWith('$') || second.startsWith('_')) return unsupported(req)
  const id = second
  if (third === undefined) {
    if (m === 'GET') return read(req, ctx, type, id)
    if (m === 'PUT') return update(req, ctx, type, id)
    if (m === 'DELETE') return remove(req, ctx, type, id)
    if (m === 'PATCH') return patch(req, ctx, type, id)
    return unsupported(req)
  }
  if (third === '_history' && m === 'GET' && rest.length === 0) {
    if (fourth === undefined) return history(req, ctx, type, id)
    return vread(req, ctx, type, id, fourth)
  }
  if (third === '$validate' && fourth === undefined && m === 'POST') return validateOperation(req, ctx, type, id)
  if (m === 'GET' && fourth === undefined && isResourceType(third)) return searchCompartment(req, ctx, type, id, third)
  return unsupported(req)
}

async function page(req: FhirRequest, ctx: FhirContext): Promise<FhirResponse> {
  const token = decodePageToken(req.query.get('_getpages') as string, ctx.secret)
  const offset = Number(req.query.get('_getpagesoffset') ?? 0)
  if (!Number.isInteger(offset) || offset < 0) throw new AppError('invalid', 'Invalid _getpagesoffset value')
  if (token.kind === 'history') return historyBundle(req, ctx, token, offset)
  if (token.kind === 'search') return searchPage(req, ctx, token)
  throw new AppError('gone', `HAPI-0417: Search ID "${req.query.get('_getpages')}" does not exist and may have expired`)
}

function unsupported(req: FhirRequest, why?: string): never {
  const params = [...req.query.keys()].join(', ')
  throw new AppError(
    'invalid',
    why ?? `HAPI-0301: Invalid request: The FHIR endpoint on this server does not know how to handle ${req.method} operation[${req.path.join('/')}] with parameters [[${params}]]`,
  )
}
