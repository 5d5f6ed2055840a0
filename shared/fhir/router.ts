// The FHIR router: a parsed request to the interaction that serves it. The HTTP edge and the Bundle
// worker both go through here. https://hl7.org/fhir/R4/http.html
import { AppError } from '../errors'
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
import { operationsNamed } from './operations'
import { OperationInput } from './operations/params'
import type { OperationDef, OperationTarget } from './operations/types'
import { decodePageToken, unknownSearchId } from './paging'
import type { FhirContext, FhirRequest, FhirResponse, FhirServices } from './request'
import { SearchQueries } from './search/query/queries'
import { cancelledOnAbort } from '../db/cancellable'

export type { Scope } from '../auth/api-keys'
import type { Scope } from '../auth/api-keys'

/** The API-key scope a request needs: reads need `read`, writes `write`, operations their own. */
export function requiredScope(req: FhirRequest): Scope {
  const last = req.path[req.path.length - 1] ?? ''
  if (last.startsWith('$')) {
    const target = operationTarget(req.path)
    const ops = target ? operationsNamed(last).filter((o) => o.levels.includes(target.level)) : []
    if (ops.some((o) => o.scope === 'admin')) return 'admin'
    if (ops.length > 0 && ops.every((o) => o.scope === 'read')) return 'read'
  }
  if (req.method === 'GET' || req.method === 'HEAD') return 'read'
  if (last === '_search') return 'read'
  return 'write'
}

/** Where an operation is invoked, from the path: system, type, instance or version level. */
function operationTarget(path: string[]): OperationTarget | undefined {
  if (path.length === 1) return { level: 'system' }
  if (path.length === 2) return { level: 'type', type: path[0] }
  if (path.length === 3) return { level: 'instance', type: path[0], id: path[1] }
  if (path.length === 5 && path[2] === '_history') return { level: 'version', type: path[0], id: path[1], version: path[3] }
  return undefined
}

export async function route(req: FhirRequest, context: FhirContext): Promise<FhirResponse> {
  // The search engine's view of the pool is made on its first statement (a read needs none); its
  // statements stop when the client leaves, and it is let go when the answer is made, to serve another
  // request's search (nothing of it may outlive the route: no interaction streams a search). A data member, not a getter beside the
  // spread: such a literal took JavaScriptCore's slow path (copyDataProperties, 4-5 µs per search).
  let view: ReturnType<typeof cancelledOnAbort> | undefined
  const search = new SearchQueries(() => {
    view = context.client ? cancelledOnAbort(context.repo.sql, context.client) : undefined
    return view?.sql ?? context.repo.sql
  })
  const ctx: FhirServices = { ...context, search }
  try {
    return await dispatch(req, ctx)
  } finally {
    view?.release()
  }
}

async function dispatch(req: FhirRequest, ctx: FhirServices): Promise<FhirResponse> {
  const [first, second, third, fourth, ...rest] = req.path
  const m = req.method === 'HEAD' ? 'GET' : req.method
  const last = req.path[req.path.length - 1]
  if (last?.startsWith('$') && last !== '$bundle-status') return operation(req, ctx, last)
  if (first === undefined) {
    if (m === 'GET' && req.query.has('_getpages')) return page(req, ctx)
    // POST [base] (a Bundle) is the HTTP edge's: it goes to a worker (api/fhir/bundles.ts), and a
    // Bundle's own entries cannot name the base (entries.ts refuses a POST without a type).
    if (m === 'GET') return searchSystem(req, ctx)
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
  if (m === 'GET' && fourth === undefined && isResourceType(third)) return searchCompartment(req, ctx, type, id, third)
  return unsupported(req)
}

async function operation(req: FhirRequest, ctx: FhirServices, name: string): Promise<FhirResponse> {
  const target = operationTarget(req.path)
  if (!target) return unsupported(req)
  if (target.type !== undefined) assertResourceType(target.type)
  const defs = operationsNamed(name).filter((o) => o.levels.includes(target.level) && (!o.types || o.types.includes(target.type as string)))
  const def: OperationDef | undefined = defs[0]
  if (!def) {
    const where = target.type ? `${target.type}/${target.id ? `${target.id}/` : ''}` : ''
    throw unknownOperation(req, `${where}${name}`)
  }
  const m = req.method === 'HEAD' ? 'GET' : req.method
  if (m !== 'GET' && m !== 'POST') return unsupported(req)
  if (!def.methods.includes(m))
    throw new AppError('not-allowed', `HAPI-0388: Can not invoke operation ${name} using HTTP ${m} because operation is not marked as idempotent`)
  return def.handler(req, ctx, target, OperationInput.of(req))
}

async function page(req: FhirRequest, ctx: FhirServices): Promise<FhirResponse> {
  const token = decodePageToken(req.query.get('_getpages') as string, ctx.secret)
  const offset = Number(req.query.get('_getpagesoffset') ?? 0)
  if (!Number.isInteger(offset) || offset < 0) throw new AppError('invalid', 'Invalid _getpagesoffset value')
  if (token.kind === 'history') return historyBundle(req, ctx, token, offset)
  if (token.kind === 'search') return searchPage(req, ctx, token)
  throw unknownSearchId(req.query.get('_getpages') as string)
}

function unsupported(req: FhirRequest): never {
  throw unknownOperation(req, req.path.join('/'))
}

/** 400 HAPI-0301: no interaction or operation of this server serves the request. */
function unknownOperation(req: FhirRequest, operation: string): AppError {
  const params = [...req.query.keys()].join(', ')
  return new AppError(
    'invalid',
    `HAPI-0301: Invalid request: The FHIR endpoint on this server does not know how to handle ${req.method} operation[${operation}] with parameters [[${params}]]`,
  )
}
