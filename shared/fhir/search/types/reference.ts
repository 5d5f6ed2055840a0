// Reference parameters, write side: Reference, canonical and uri values become rows naming a local
// target (type, id, version) or, for anything not on this server, the absolute URL.
// https://hl7.org/fhir/R4/search.html#reference, https://hl7.org/fhir/R4/references.html#literal
import { isResourceType } from '../../definitions/resource-types'
import { invalid } from '../../../errors'
import { splitEscaped, unescape } from '../escape'
import { textColumns } from '../../../db/text-columns'
import { registerParamType } from './param-type'
import type { ExtractContext, TypedValue } from './typed-value'

export interface ReferenceRow {
  code: string
  targetType: string | null
  targetId: string | null
  version: string | null
  /** The absolute or canonical URL (without `|version`) of a target not on this server; `urn:` as written. */
  url: string | null
  /** Reference.identifier, for logical references (`:identifier`). */
  identifierSystem: string | null
  identifierValue: string | null
}

export interface ParsedReference {
  targetType: string | null
  targetId: string | null
  version: string | null
  url: string | null
}

// [base/]Type/id[/_history/vid]: https://hl7.org/fhir/R4/references.html#regex
const LITERAL = /^(?:(.*)\/)?([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/([A-Za-z0-9\-.]{1,64}))?$/

/**
 * A literal reference read against this server's base: relative ones and absolute ones under `baseUrl`
 * are local (type, id, version); other absolute URLs, canonicals and `urn:` keep their URL.
 * Contained (`#id`) and empty references give undefined.
 */
export function parseReference(ref: string, baseUrl?: string): ParsedReference | undefined {
  if (ref === '' || ref.startsWith('#')) return undefined
  const m = LITERAL.exec(ref)
  if (m && isResourceType(m[2]!)) {
    const prefix = m[1]
    if (prefix === undefined || (baseUrl !== undefined && trimSlash(prefix) === trimSlash(baseUrl))) {
      return { targetType: m[2]!, targetId: m[3]!, version: m[4] ?? null, url: null }
    }
  }
  const bar = ref.indexOf('|')
  if (bar > 0 && !ref.startsWith('urn:')) return { targetType: null, targetId: null, version: ref.slice(bar + 1) || null, url: ref.slice(0, bar) }
  return { targetType: null, targetId: null, version: null, url: ref }
}

/** The resource type a Reference points at (`resolve() is T` without resolving): from its URL or `type`. */
export function referenceTargetType(reference: any): string | undefined {
  const ref = reference?.reference
  if (typeof ref === 'string') {
    const m = LITERAL.exec(ref)
    if (m && isResourceType(m[2]!)) return m[2]
  }
  return typeof reference?.type === 'string' ? reference.type : undefined
}

function trimSlash(s: string): string {
  return s.endsWith('/') ? s.slice(0, -1) : s
}

export function extract(values: TypedValue[], ctx: ExtractContext): ReferenceRow[] {
  const out: ReferenceRow[] = []
  for (const { type, value } of values) {
    if (typeof value === 'string') {
      // canonical, uri, url
      const p = parseReference(value, ctx.baseUrl)
      if (p) out.push({ code: ctx.code, ...p, identifierSystem: null, identifierValue: null })
    } else if (type === 'Reference' && value && typeof value === 'object') {
      const row = referenceRow(value, ctx)
      if (row) out.push(row)
    }
    // Other choices of the element (Consent.source as Attachment or Identifier) and inline resources
    // (Bundle.entry[0].resource) are not references, as in HAPI.
  }
  return out
}

function referenceRow(value: any, ctx: ExtractContext): ReferenceRow | undefined {
  const p = typeof value.reference === 'string' ? parseReference(value.reference, ctx.baseUrl) : undefined
  const identifierSystem = typeof value.identifier?.system === 'string' ? value.identifier.system : null
  const identifierValue = typeof value.identifier?.value === 'string' ? value.identifier.value : null
  if (!p && identifierValue === null) return undefined
  // a logical reference (identifier only) names its target type in Reference.type, if at all
  const logicalType = !p && typeof value.type === 'string' ? value.type : null
  return {
    code: ctx.code,
    targetType: p ? p.targetType : logicalType,
    targetId: p?.targetId ?? null,
    version: p?.version ?? null,
    url: p?.url ?? null,
    identifierSystem,
    identifierValue,
  }
}

/**
 * The Patient id a reference criterion value can only match (`Patient/{id}`, `{id}` under `:Patient`, or
 * `{id}` of a parameter whose only target is Patient): the rows it matches name that Patient. Undefined
 * for anything else (other or several types, URLs, `:identifier`).
 */
export function patientTargetOf(raw: string, modifier: string | undefined, def: { targets: string[] }, baseUrl: string): string | undefined {
  if (modifier !== undefined && modifier !== 'Patient') return undefined
  const value = unescape(raw)
  if (!value.includes('/') && !value.includes(':')) {
    const types = modifier ? [modifier] : def.targets
    return types.length === 1 && types[0] === 'Patient' && /^[A-Za-z0-9\-.]{1,64}$/.test(value) ? value : undefined
  }
  const ref = parseReference(value, baseUrl)
  return ref?.targetType === 'Patient' && ref.targetId ? ref.targetId : undefined
}

/** The `patient` column of a resource's token rows: the one Patient its references name, '*' for several. */
export function referencedPatient(rows: readonly ReferenceRow[]): string | null {
  let one: string | null = null
  for (const r of rows) {
    if (r.targetType !== 'Patient' || r.targetId === null) continue
    if (one === null) one = r.targetId
    else if (one !== r.targetId) return '*'
  }
  return one
}

// Read side: Type/id, a bare id (any target type, or the :[type] modifier's), an absolute URL on this
// server (local) or elsewhere (matched as a URL), a canonical with |version, and :identifier
// (system|value of Reference.identifier). The version of a versioned reference is ignored, as HAPI.
// https://hl7.org/fhir/R4/search.html#reference
export const referenceType = registerParamType<ReferenceRow>({
  type: 'reference',
  table: 'idx_reference',
  extract,
  copy: {
    columns: ['rid', 'res_type', 'code', 'target_type', 'target_id', 'target_version', 'url', 'identifier_system', 'identifier_value'],
    keys: ['rid', 'resType', 'code', 'targetType', 'targetId', 'version', 'url', 'identifierSystem', 'identifierValue'],
  },
  insert: (tx, rows) =>
    tx`ins_reference as (insert into idx_reference (rid, res_type, code, target_type, target_id, target_version, url, identifier_system, identifier_value)
      select rid::bigint, res_type, code, target_type, target_id, target_version, url, identifier_system, identifier_value
      from ${textColumns(tx, rows, ['rid', 'resType', 'code', 'targetType', 'targetId', 'version', 'url', 'identifierSystem', 'identifierValue'])}
        as x(rid, res_type, code, target_type, target_id, target_version, url, identifier_system, identifier_value))`,
  // A reference names one resource: its rows are the fewest.
  driverRank: 0,
  modifiers: new Set(['identifier']),
  // :[type] (`subject:Patient=1`)
  acceptsModifier: (modifier) => /^[A-Z]/.test(modifier),
  predicate(sql, raw, ctx) {
    const value = unescape(raw)
    if (value === '') throw invalid(`Missing value for parameter ${ctx.def.code}`)
    if (ctx.modifier === 'identifier') {
      const [system, code] = splitEscaped(raw, '|').map(unescape)
      if (code === undefined) return sql`i.identifier_value = ${system}`
      if (system === '') return sql`i.identifier_system is null and i.identifier_value = ${code}`
      return code === '' ? sql`i.identifier_system = ${system}` : sql`i.identifier_system = ${system} and i.identifier_value = ${code}`
    }
    const typed = ctx.modifier // :Patient
    if (!value.includes('/') && !value.includes(':')) {
      if (!/^[A-Za-z0-9\-.]{1,64}$/.test(value)) throw invalid(`Invalid reference value "${value}" for parameter ${ctx.def.code}`)
      const types = typed ? [typed] : ctx.def.targets
      return types.length > 0 ? sql`i.target_id = ${value} and i.target_type = any(${types}::text[])` : sql`i.target_id = ${value}`
    }
    const ref = parseReference(value, ctx.baseUrl)
    if (ref?.targetType && ref.targetId) {
      if (typed && typed !== ref.targetType) throw invalid(`Reference "${value}" does not match the type modifier :${typed}`)
      return sql`i.target_id = ${ref.targetId} and i.target_type = ${ref.targetType}`
    }
    if (ref?.url) return ref.version ? sql`i.url = ${ref.url} and i.target_version = ${ref.version}` : sql`i.url = ${ref.url}`
    throw invalid(`Invalid reference value "${value}" for parameter ${ctx.def.code}`)
  },
  sortValue: (sql, desc) =>
    desc ? sql`max(coalesce(i.target_type || '/' || i.target_id, i.url))` : sql`min(coalesce(i.target_type || '/' || i.target_id, i.url))`,
  filterOps: ['eq', 'ne'],
  // logical references (identifier only) point nowhere to differ
  compare: (sql, op, value, ctx, h) =>
    op === 'ne' ? sql`(i.target_id is not null or i.url is not null) and not coalesce((${h.predicate(sql, value, ctx)}), false)` : h.predicate(sql, value, ctx),
})
