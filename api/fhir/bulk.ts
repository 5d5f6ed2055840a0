// HTTP adapter of Bulk Data: $export kick-off (system, Patient, Group), $import kick-off, their status
// URLs (GET, POST, HEAD, DELETE) and file downloads. The work is in shared/bulk; this file reads the request, checks
// the key's scope and ownership, and writes the answers the IG gives (202 + Content-Location, a manifest
// as application/json, NDJSON files). https://hl7.org/fhir/uv/bulkdata/STU2/export.html
import type { Principal, Scope } from '../../shared/auth/api-keys'
import { BULK_EXPORT, BULK_IMPORT, bulkJobFor, bulkKindOf, deleteBulkJob } from '../../shared/bulk/bulk-job'
import { type ExportTarget, kickOffExport } from '../../shared/bulk/export-kickoff'
import type { BulkStatus } from '../../shared/bulk/bulk-status'
import { exportFile, exportStatus } from '../../shared/bulk/export-status'
import type { BulkFileStore } from '../../shared/bulk/file-store'
import { kickOffImport } from '../../shared/bulk/import-kickoff'
import { importFile, importStatus } from '../../shared/bulk/import-status'
import { storeUpload, UPLOAD_FILE, uploadFor, uploadUrl } from '../../shared/bulk/upload'
import { AppError } from '../../shared/errors'
import { OperationInput } from '../../shared/fhir/operations/params'
import type { FhirContext, FhirRequest, FhirResponse } from '../../shared/fhir/request'
import type { Jobs } from '../../shared/jobs/queues'
import { authorize } from '../http/auth'

const NDJSON = 'application/fhir+ndjson'
const STATUS_METHODS = new Set(['GET', 'HEAD', 'POST', 'DELETE'])

/** True for the paths this module answers. */
export function isBulkPath(path: string[]): boolean {
  const last = path[path.length - 1]
  return (
    last === '$export' ||
    last === '$import' ||
    (path.length === 1 && (last === '$export-poll-status' || last === '$import-poll-status' || last === '$bulk-upload')) ||
    (path[0] === '$bulk-file' && path.length === 3)
  )
}

/** An upload's body is streamed into the file store by handleBulk, not read by the FHIR edge. */
export function bulkStreamsBody(path: string[]): boolean {
  return path.length === 1 && path[0] === '$bulk-upload'
}

/**
 * Answers a bulk request: a Response for what is not a FHIR resource (manifest, NDJSON file), a
 * FhirResponse for the rest. `principal` is undefined when authentication is disabled: then no scope
 * or ownership is checked. The kick-off URL, on the FHIR base clients see, is the manifest's `request`
 * (a POST's parameters are in its body, not repeated, as the IG has it).
 */
export async function handleBulk(
  request: Request,
  req: FhirRequest,
  ctx: FhirContext,
  jobs: Jobs,
  store: BulkFileStore,
  principal: Principal | undefined,
): Promise<Response | FhirResponse> {
  const path = req.path
  const last = path[path.length - 1]
  const url = new URL(request.url)
  const header = { owner: principal?.keyId ?? null, request: `${ctx.baseUrl}${url.pathname.slice('/fhir'.length)}${url.search}`, baseUrl: ctx.baseUrl }
  const ttl = ctx.config.bulk.fileTtlMs
  if (path[0] === '$bulk-upload') {
    allow(principal, 'admin')
    if (req.method !== 'POST') throw new AppError('not-allowed', 'An upload is a POST of NDJSON to [base]/$bulk-upload')
    const to = req.query.get('upload')
    const append = to === null ? undefined : await uploadFor(ctx.repo.sql, to, principal?.keyId, ttl)
    const upload = await storeUpload(ctx.repo.sql, store, request.body, header.owner, ctx.config.bulk.importMaxInputBytes, append)
    const location = uploadUrl(ctx.baseUrl, upload.id)
    return {
      ...informational(append ? 200 : 201, `Stored ${upload.bytes} bytes: name ${location} as the url of an $import input`),
      location,
    }
  }
  if (path[0] === '$bulk-file') {
    if (req.method !== 'GET' && req.method !== 'HEAD') throw new AppError('not-allowed', `${req.method} is not allowed on a bulk file`)
    if (path[2] === UPLOAD_FILE) {
      allow(principal, 'admin')
      const upload = await uploadFor(ctx.repo.sql, path[1], principal?.keyId, ttl)
      return new Response(store.read(upload.id, UPLOAD_FILE, upload.chunks), { headers: { 'content-type': NDJSON } })
    }
    // An export's files need the export scope, an import's error files the admin scope.
    const kind = await bulkKindOf(ctx.repo.sql, path[1])
    allow(principal, kind === BULK_EXPORT ? 'export' : 'admin')
    const job = await bulkJobFor(ctx.repo.sql, path[1], kind, principal?.keyId, ttl)
    const file = job.kind === BULK_EXPORT ? exportFile(job.result, path[2]) : importFile(job.result, path[2])
    if (!file) throw new AppError('not-found', `Job ${job.id} has no file ${path[2]}`)
    return new Response(store.read(job.id, file.id, file.chunks), { headers: { 'content-type': NDJSON } })
  }
  if (last === '$export-poll-status' || last === '$import-poll-status') {
    const kind = last === '$export-poll-status' ? BULK_EXPORT : BULK_IMPORT
    allow(principal, kind === BULK_EXPORT ? 'export' : 'admin')
    // GET, POST and HEAD answer the status (HAPI takes the operation by GET and POST); DELETE cancels.
    if (!STATUS_METHODS.has(req.method)) throw new AppError('not-allowed', `${req.method} is not allowed on ${last}`)
    const id = OperationInput.of(req).string('_jobId')
    if (!id) throw new AppError('invalid', `${last} requires a _jobId parameter`)
    const job = await bulkJobFor(ctx.repo.sql, id, kind, principal?.keyId, ttl)
    if (req.method === 'DELETE') {
      await deleteBulkJob(ctx.repo.sql, store, job)
      return informational(202, `Deleted job ${id}: it is cancelled if it was running, and its files are removed`)
    }
    return statusResponse(kind === BULK_EXPORT ? exportStatus(job, ctx.baseUrl, ttl) : importStatus(job, ctx.baseUrl, ttl))
  }
  if (last === '$import') {
    allow(principal, 'admin')
    if (req.method !== 'POST' || path.length !== 1) throw new AppError('not-allowed', 'HAPI-0388: $import is invoked with POST on the server base')
    const id = await kickOffImport(ctx, jobs, req.body, req.headers.prefer, header)
    return accepted(statusUrl(ctx, '$import-poll-status', id), `Bulk import job has been submitted with ID: ${id}`)
  }
  allow(principal, 'export')
  if (req.method !== 'GET' && req.method !== 'POST') throw new AppError('not-allowed', `${req.method} is not allowed on $export`)
  const target = exportTarget(path)
  const input = OperationInput.of(req)
  const names = [...new Set([...req.query.keys(), ...parameterNames(req.body)])]
  const id = await kickOffExport(ctx, jobs, target, input, names, req.headers.prefer, header)
  return accepted(statusUrl(ctx, '$export-poll-status', id), `Bulk export job has been submitted with ID: ${id}`)
}

/** [base]/$export, Patient/$export, Patient/{id}/$export, Group/{id}/$export. */
function exportTarget(path: string[]): ExportTarget {
  if (path.length === 1) return { level: 'system' }
  if (path[0] === 'Patient' && path.length === 2) return { level: 'patient' }
  if (path[0] === 'Patient' && path.length === 3) return { level: 'patient', id: path[1] }
  if (path[0] === 'Group' && path.length === 3) return { level: 'group', id: path[1] }
  throw new AppError('invalid', `$export is invoked on [base], Patient, Patient/[id] or Group/[id], not ${path.slice(0, -1).join('/')}`)
}

function allow(principal: Principal | undefined, scope: Scope): void {
  if (principal) authorize(principal, scope)
}

function statusUrl(ctx: FhirContext, op: string, id: string): string {
  return `${ctx.baseUrl}/${op}?_jobId=${id}`
}

function parameterNames(body: unknown): string[] {
  const b = body as { resourceType?: string; parameter?: { name?: unknown }[] } | undefined
  if (b?.resourceType !== 'Parameters' || !Array.isArray(b.parameter)) return []
  return b.parameter.map((p) => String(p?.name))
}

function accepted(contentLocation: string, message: string): FhirResponse {
  return { ...informational(202, message), headers: { 'content-location': contentLocation } }
}

function informational(status: number, message: string): FhirResponse {
  return { status, resource: { resourceType: 'OperationOutcome', issue: [{ severity: 'information', code: 'informational', diagnostics: message }] } }
}

function statusResponse(s: BulkStatus): Response | FhirResponse {
  if (s.kind === 'manifest')
    return new Response(JSON.stringify(s.manifest), { status: 200, headers: { 'content-type': 'application/json', expires: s.expires.toUTCString() } })
  if (s.kind === 'failed')
    return { status: s.status, resource: { resourceType: 'OperationOutcome', issue: [{ severity: 'error', code: 'processing', diagnostics: s.message }] } }
  return { ...informational(202, `In progress: ${s.progress}`), headers: { 'x-progress': s.progress, 'retry-after': String(s.retryAfter) } }
}
