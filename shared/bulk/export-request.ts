// The $export kick-off parameters, read and checked before anything is queued: an unknown parameter,
// a bad value or a missing `Prefer: respond-async` is a 400 (Bulk Data Access IG 2.0, "Bulk Data
// Kick-off Request"; HAPI's BulkDataExportProvider and BulkExportJobParametersValidator).
// https://hl7.org/fhir/uv/bulkdata/STU2/export.html#query-parameters
import { AppError, invalid } from '../errors'
import { isResourceType } from '../fhir/definitions/resource-types'
import type { OperationInput } from '../fhir/operations/params'
import { patientCompartmentTypes } from '../fhir/search/query/compartment'
import { unencodedPlus } from '../fhir/search/escape'
import { parseSearch } from '../fhir/search/query/parse'
import { parseReference } from '../fhir/search/types/reference'
import { checkAsync, parseLenient } from './prefer'

export type ExportLevel = 'system' | 'patient' | 'group'

/** What the job exports, as recorded in its row (JSON). */
export interface ExportParams {
  level: ExportLevel
  /** Group-level: the Group's id. */
  group?: string
  /** The types asked for with `_type`; absent: every type the level covers. */
  types?: string[]
  /** `_since`: resources whose version as of transactionTime was written after this instant. */
  since?: string
  /** `_typeFilter` values, `Type?criteria`, each checked as a search when read. */
  typeFilters: string[]
  /** `_elements`: `Type.element` or `element` (every type). */
  elements?: string[]
  /** The patients whose compartments are exported (Patient-level `patient`, a Group's members). */
  patients?: string[]
}

const FORMATS = new Set(['application/fhir+ndjson', 'application/ndjson', 'ndjson'])
const KNOWN = new Set(['_outputFormat', '_type', '_since', '_typeFilter', '_elements', 'patient', '_format', '_pretty'])
// Result and control parameters mean nothing in a _typeFilter: only criteria select resources.
const NOT_CRITERIA = ['_count', '_sort', '_include', '_revinclude', '_total', '_summary', '_elements', '_contained', '_containedType']

/** Bounds on what one kick-off may ask (each filter is a search compiled into every page's statement). */
const MAX_TYPE_FILTERS = 100
const MAX_PATIENTS = 10_000

/** Bulk export of Binary resources is forbidden, as HAPI has it (BulkExportJobParametersValidator). */
export const NOT_EXPORTED = 'Binary'

/**
 * The kick-off's parameters (query string, or a Parameters body for POST). `prefer` is the request's
 * Prefer header: `respond-async` is required, and `handling=lenient` lets unknown parameters through.
 */
export function readExportRequest(input: OperationInput, names: string[], prefer: string | undefined, level: ExportLevel, baseUrl: string): ExportParams {
  checkAsync(prefer, '$export')
  if (input.resource !== undefined) throw invalid('$export takes a Parameters resource as its body (or none)')
  const lenient = parseLenient(prefer)
  for (const name of names) {
    if (!KNOWN.has(name) && !lenient) throw invalid(`Unknown or unsupported $export parameter "${name}"`)
  }
  const formatWritten = input.string('_outputFormat')
  const format = formatWritten && unencodedPlus(formatWritten)
  if (format !== undefined && !FORMATS.has(format))
    throw invalid(`The only allowed format for Bulk Export is currently application/fhir+ndjson (also ndjson and application/ndjson); got "${format}"`)

  const types = listOf(textsOf(input, '_type'))
  for (const t of types) {
    if (!isResourceType(t)) throw invalid(`Resource type ${t} is not a supported resource type!`)
    if (t === NOT_EXPORTED) throw invalid('Bulk export of Binary resources is forbidden')
  }
  if (level !== 'system') {
    const allowed = new Set(['Patient', ...patientCompartmentTypes()])
    const outside = types.filter((t) => !allowed.has(t))
    if (outside.length > 0) throw invalid(`Resource types ${outside.join(', ')} are not in the Patient compartment, which a ${level}-level export covers`)
  }

  const sinceWritten = input.string('_since')
  const since = sinceWritten && unencodedPlus(sinceWritten)
  if (since !== undefined && !isInstant(since)) throw invalid(`_since must be a FHIR instant (e.g. 2024-01-01T00:00:00Z), not "${since}"`)

  const typeFilters = textsOf(input, '_typeFilter').flatMap(splitTypeFilters)
  if (typeFilters.length > MAX_TYPE_FILTERS) throw new AppError('too-large', `At most ${MAX_TYPE_FILTERS} _typeFilter values per export`)
  for (const f of typeFilters) checkTypeFilter(f, types)

  const elements = listOf(textsOf(input, '_elements'))
  for (const e of elements) {
    const dot = e.indexOf('.')
    if (dot >= 0 && (!isResourceType(e.slice(0, dot)) || e.indexOf('.', dot + 1) >= 0))
      throw invalid(`_elements: "${e}" is not an element of a resource type (Type.element, root elements only)`)
  }

  const patientValues = input.values('patient')
  if (patientValues.length > MAX_PATIENTS) throw new AppError('too-large', `At most ${MAX_PATIENTS} patient values per export (a Group names more)`)
  const patients = patientValues.map((v) => patientId(v, baseUrl))
  if (patients.length > 0 && level === 'system') throw invalid('The patient parameter applies to Patient- and Group-level exports only')
  return {
    level,
    ...(types.length > 0 ? { types } : {}),
    ...(since !== undefined ? { since: new Date(since).toISOString() } : {}),
    typeFilters,
    ...(elements.length > 0 ? { elements } : {}),
    ...(patients.length > 0 ? { patients: [...new Set(patients)] } : {}),
  }
}

/** The values of a text parameter; one without a value (a Parameters part with none, or with parts) is a 400. */
function textsOf(input: OperationInput, name: string): string[] {
  return input.values(name).map((v) => {
    if (typeof v !== 'string') throw invalid(`Parameter ${name} must have a string value`)
    return v
  })
}

/** Comma-separated values, the parameter repeated or not (IG: "repeated parameters"). */
function listOf(values: string[]): string[] {
  return values
    .flatMap((v) => v.split(','))
    .map((s) => s.trim())
    .filter(Boolean)
}

/**
 * The filters of one `_typeFilter` value: several may be joined by commas (Bulk Data IG 1.0's form, which
 * HAPI's BulkExportJobParametersBuilder splits too). A comma followed by a resource type and `?` starts
 * another filter; any other comma is the OR of a criterion's values (`Observation?code=a,b`).
 */
function splitTypeFilters(value: string): string[] {
  const filters: string[] = []
  let start = 0
  for (const m of value.matchAll(/,([A-Za-z]+)\?/g)) {
    if (!isResourceType(m[1])) continue
    filters.push(value.slice(start, m.index))
    start = m.index + 1
  }
  filters.push(value.slice(start))
  return filters
}

// https://hl7.org/fhir/R4/datatypes.html#instant (seconds required, time zone required)
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/

/** An instant the job's statements can compare with: in UTC within years 1 to 9999, as FHIR's and
 *  PostgreSQL's (0000-01-01 and 9999-12-31T23:59:59-14:00 failed the job's every attempt). */
function isInstant(s: string): boolean {
  const t = Date.parse(s)
  if (!INSTANT.test(s) || Number.isNaN(t)) return false
  const year = new Date(t).getUTCFullYear()
  return year >= 1 && year <= 9999
}

/** `Type?criteria`, its type among `_type` when that is given, its criteria a valid search of the type. */
function checkTypeFilter(filter: string, types: string[]): void {
  const q = filter.indexOf('?')
  const type = q < 0 ? filter : filter.slice(0, q)
  if (q < 0 || !isResourceType(type) || q === filter.length - 1) throw invalid(`Invalid _typeFilter "${filter}": expected [resourceType]?[search criteria]`)
  if (types.length > 0 && !types.includes(type)) throw invalid(`Invalid _typeFilter "${filter}": ${type} is not one of the _type values`)
  const query = new URLSearchParams(filter.slice(q + 1))
  // Decoded twice (the parameter, then its query): a NUL the URL check of the request could not see.
  if ([...query].some(([k, v]) => k.includes('\0') || v.includes('\0'))) throw invalid(`Invalid _typeFilter "${filter}": it holds a NUL character`)
  for (const key of query.keys()) {
    if (NOT_CRITERIA.some((p) => key === p || key.startsWith(`${p}:`))) throw invalid(`Invalid _typeFilter "${filter}": ${key} is not a search criterion`)
  }
  parseSearch([type], query, { defaultCount: 1, maxCount: 1 }) // 400 for unknown parameters and bad syntax
}

/**
 * The id of the Patient `ref` names on this server: `Patient/id`, relative or on `baseUrl`; undefined for
 * anything else (another type, another server, not a reference). A `patient` value and a Group's members
 * are read by it alike.
 */
export function localPatientId(ref: unknown, baseUrl: string): string | undefined {
  const target = typeof ref === 'string' ? parseReference(ref, baseUrl) : undefined
  return target?.targetType === 'Patient' ? target.targetId || undefined : undefined
}

/** A `patient` value: a Reference (POST) or `Patient/id` text. */
function patientId(value: unknown, baseUrl: string): string {
  const ref = typeof value === 'string' ? value : (value as { reference?: unknown })?.reference
  const id = localPatientId(ref, baseUrl)
  if (id === undefined) throw new AppError('invalid', `Invalid patient parameter: expected a reference to a Patient (Patient/id), got ${JSON.stringify(value)}`)
  return id
}
