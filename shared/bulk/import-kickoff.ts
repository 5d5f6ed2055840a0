// $import kick-off, with the Parameters body HAPI FHIR takes (BulkDataImportProvider): `inputFormat`
// application/fhir+ndjson, optional `inputSource`, `storageDetail` (its `maxBatchResourceCount`), and
// `input` parts each with a `type` and a `url`. Every URL is checked against the import allow-list here
// and again by the worker that fetches it.
import { AppError, invalid } from '../errors'
import { isResourceType } from '../fhir/definitions/resource-types'
import { parametersOf } from '../fhir/operations/params'
import type { FhirContext } from '../fhir/request'
import type { Jobs } from '../jobs/queues'
import { BULK_IMPORT, type BulkJobHeader, startBulkJob } from './bulk-job'
import { assertAllowedInput, type ImportInput } from './ndjson-source'
import { Outbound } from '../net/client'
import { checkAsync } from './prefer'
import { uploadFor, uploadIdOf } from './upload'

export interface ImportParams {
  inputs: ImportInput[]
  inputSource?: string
  /** Resources written per transaction at most. */
  batchSize: number
}

export type ImportJobParams = ImportParams & BulkJobHeader

const NDJSON = 'application/fhir+ndjson'
const KNOWN = new Set(['inputFormat', 'inputSource', 'storageDetail', 'input'])
/** Resources per batch (one transaction and checkpoint): 500 measured as fast as 1,000 and keeps less in
 *  memory; storageDetail.maxBatchResourceCount may ask for fewer, or up to MAX_BATCH. */
const DEFAULT_BATCH = 500
const MAX_BATCH = 1000
const MAX_INPUTS = 1000

type Part = { name?: unknown; part?: Part[]; [value: string]: unknown }

export async function kickOffImport(
  ctx: FhirContext,
  jobs: Jobs,
  body: unknown,
  prefer: string | undefined,
  header: Omit<BulkJobHeader, 'transactionTime'>,
): Promise<string> {
  checkAsync(prefer, '$import')
  const params = readImportRequest(body, ctx.config.bulk.importOrigins, ctx.baseUrl)
  const outbound = Outbound.fromConfig(ctx.config)
  for (const input of params.inputs) {
    const upload = uploadIdOf(input.url, ctx.baseUrl)
    // header.owner is null when authentication is disabled: then any upload may be named.
    if (upload !== undefined)
      input.upload = await uploadFor(ctx.repo.sql, upload, ctx.config.authDisabled ? undefined : header.owner, ctx.config.bulk.fileTtlMs)
    // An internal address OUTBOUND_ALLOW does not name is refused now (the worker's call checks it again).
    else await outbound.checkUrl(input.url)
  }
  const job: ImportJobParams = { ...params, ...header, transactionTime: new Date().toISOString() }
  return startBulkJob(ctx.repo.sql, jobs, BULK_IMPORT, job, ctx.config.bulk.maxActivePerKey)
}

/** The request's parameters; an input URL is an upload of this server (`baseUrl`) or on the allow-list. */
export function readImportRequest(body: unknown, origins: readonly string[], baseUrl: string): ImportParams {
  const b = body as { resourceType?: unknown; parameter?: unknown } | undefined
  if (b?.resourceType !== 'Parameters' || b.parameter === undefined) throw invalid('$import takes a Parameters resource as its body')
  const parts = parametersOf(b) as Part[]
  for (const p of parts) if (!KNOWN.has(String(p?.name))) throw invalid(`Unknown $import parameter "${String(p?.name)}"`)
  const format = valueOf(parts.find((p) => p.name === 'inputFormat'))
  if (format !== NDJSON) throw invalid(`HAPI-2048: Input format must be "${NDJSON}"`)
  const source = valueOf(parts.find((p) => p.name === 'inputSource'))
  let batchSize = DEFAULT_BATCH
  const storage = parts.find((p) => p.name === 'storageDetail')
  for (const d of storage?.part ?? []) {
    const name = String(d?.name)
    const v = valueOf(d)
    if (name === 'maxBatchResourceCount') {
      const n = Number(v)
      if (!Number.isInteger(n) || n < 1) throw invalid(`storageDetail.maxBatchResourceCount must be a positive integer, not ${JSON.stringify(v)}`)
      batchSize = Math.min(n, MAX_BATCH)
    } else if (name === 'credentialHttpBasic') {
      throw new AppError('not-allowed', 'storageDetail.credentialHttpBasic is not supported: inputs are read from allow-listed origins without credentials')
    } else if (name !== 'type') throw invalid(`Unknown storageDetail part "${name}"`)
  }
  const inputs = parts
    .filter((p) => p.name === 'input')
    .map((p) => {
      const type = valueOf(p.part?.find((x) => x.name === 'type'))
      const url = valueOf(p.part?.find((x) => x.name === 'url'))
      if (typeof type !== 'string' || type === '') throw invalid('Missing type for input')
      if (typeof url !== 'string' || url === '') throw invalid('Missing url for input')
      if (!isResourceType(type)) throw invalid(`Input type ${type} is not a resource type`)
      if (uploadIdOf(url, baseUrl) === undefined) assertAllowedInput(url, origins)
      return { type, url }
    })
  if (inputs.length === 0) throw invalid('No URLs specified')
  if (inputs.length > MAX_INPUTS) throw new AppError('too-large', `At most ${MAX_INPUTS} inputs per $import`)
  return { inputs, ...(typeof source === 'string' ? { inputSource: source } : {}), batchSize }
}

function valueOf(p: Part | undefined): unknown {
  if (!p) return undefined
  for (const k of Object.keys(p)) if (k.startsWith('value')) return p[k]
  return undefined
}
