// Token parameters, write side: a row per system|code pair of a code, Coding, CodeableConcept,
// Identifier, ContactPoint or boolean, with the display text :text searches (normalised as strings are).
// https://hl7.org/fhir/R4/search.html#token
import { systemForCode } from './code-systems'
import type { ExtractContext, TypedValue } from './typed-value'
import { invalid } from '../../../errors'
import { splitEscaped, unescape } from '../escape'
import type { Sql } from '../../../db/client'
import { textColumns } from '../../../db/text-columns'
import { type Fragment, registerParamType } from './param-type'
import { codeSystemIdOf, splitCanonical, valueSetIdOf } from '../../terminology/resolve'
import { type ReferenceRow, referencedPatient } from './reference'
import { normalizeString, startsWith } from './string'

export interface TokenRow {
  code: string
  system: string | null
  value: string | null
  /** Display text for `:text`, normalised like string values; null when none. */
  text: string | null
  /** The one Patient the resource references ('*' for several, null for none): set when stored. */
  patient?: string | null
}

export function extract(values: TypedValue[], ctx: ExtractContext): TokenRow[] {
  const out: TokenRow[] = []
  const add = (system: unknown, value: unknown, text?: unknown) => {
    const s = typeof system === 'string' && system !== '' ? system : null
    const v = typeof value === 'string' && value !== '' ? value : null
    const t = typeof text === 'string' && text.trim() !== '' ? normalizeString(text) : null
    if (v !== null || t !== null) out.push({ code: ctx.code, system: s, value: v, text: t })
  }
  for (const { type, value, element } of values) {
    if (value === null || value === undefined) continue
    if (typeof value === 'boolean') add(null, String(value))
    else if (typeof value === 'number') add(null, String(value))
    else if (typeof value === 'string') {
      // a code bound to a required value set carries that value set's system, as HAPI's enumerations do
      const binding = type === 'code' ? element?.requiredBinding : undefined
      add(binding ? systemForCode(binding, value) : null, value)
    } else if (type === 'Coding') add(value.system, value.code, value.display)
    else if (type === 'CodeableConcept') {
      // a row per coding with its display (a lone coding without one takes the concept's text), and
      // the concept's text on a row of its own when no coding row already carries it
      const codings: any[] = (value.coding ?? []).filter(Boolean)
      const texts = codings.map((c) => c.display ?? (codings.length === 1 ? value.text : undefined))
      codings.forEach((c, i) => add(c.system, c.code, texts[i]))
      if (!texts.includes(value.text)) add(null, null, value.text)
    } else if (type === 'Identifier') {
      // HAPI: system|value, and the type's text in the :text index
      add(value.system, value.value, value.type?.text)
    } else if (type === 'ContactPoint') {
      // HAPI addToken_ContactPoint indexes system (phone, email...) | value
      add(value.system, value.value)
    }
  }
  return out
}

// Read side. [system]|[code], |[code], [system]|, [code]; :not (resources without the code match too),
// :text (starts-with on the display text); :in / :not-in (a code of the value set's expansion) and
// :below / :above (the code or one of its descendants / ancestors) read the terminology store, which
// terminology/search-criteria.ts has checked and made current before the search runs.
// https://hl7.org/fhir/R4/search.html#token
export const tokenType = registerParamType<TokenRow>({
  type: 'token',
  table: 'idx_token',
  extract,
  // `patient`: the one Patient the resource references (set on every token row by `complete` below).
  copy: {
    columns: ['rid', 'res_type', 'code', 'system', 'value', 'text_norm', 'patient'],
    keys: ['rid', 'resType', 'code', 'system', 'value', 'text', 'patient'],
  },
  insert: (tx, rows) =>
    tx`ins_token as (insert into idx_token (rid, res_type, code, system, value, text_norm, patient)
      select rid::bigint, res_type, code, system, value, text_norm, patient
      from ${textColumns(tx, rows, ['rid', 'resType', 'code', 'system', 'value', 'text', 'patient'])} as x(rid, res_type, code, system, value, text_norm, patient))`,
  // Token rows carry the Patient the resource references, so that a search by patient and code finds
  // its rows in one index range (query/compile.ts patientCodeDriver).
  complete: (rows, all) => {
    const patient = referencedPatient(all.reference as ReferenceRow[])
    for (const row of rows) row.patient = patient
  },
  // A code names few resources (after a reference, which names one).
  driverRank: 1,
  modifiers: new Set(['not', 'text', 'in', 'not-in', 'above', 'below']),
  negating: new Set(['not', 'not-in']),
  predicate(sql, raw, ctx) {
    // a range of the text key (sql/migrations/0026_token_text_key.sql), as a string's starts-with
    if (ctx.modifier === 'text') return startsWith(sql, sql`i.text_norm`, normalizeString(unescape(raw)))
    if (ctx.modifier === 'in' || ctx.modifier === 'not-in') {
      const [url, version] = splitCanonical(unescape(raw))
      if (url === '') throw invalid(`Missing value set URL for parameter ${ctx.def.code}:${ctx.modifier}`)
      return sql`(i.system, i.value) in (select e.system, e.code from term_expansion e where e.vs_id = ${valueSetIdOf(sql, url, version)})`
    }
    if (ctx.modifier === 'above' || ctx.modifier === 'below') return hierarchyPredicate(sql, raw, ctx.def.code, ctx.modifier)
    const parts = splitEscaped(raw, '|')
    if (parts.length > 2) throw invalid(`Invalid token value "${raw}" for parameter ${ctx.def.code}: more than one "|"`)
    if (parts.length === 1) {
      const code = unescape(parts[0])
      if (code === '') throw invalid(`Missing value for parameter ${ctx.def.code}`)
      return sql`i.value = ${code}`
    }
    const system = unescape(parts[0])
    const code = unescape(parts[1])
    if (system === '' && code === '') throw invalid(`Invalid token value "${raw}" for parameter ${ctx.def.code}`)
    if (system === '') return sql`i.system is null and i.value = ${code}`
    if (code === '') return sql`i.system = ${system}`
    return sql`i.value = ${code} and i.system = ${system}`
  },
  // By system, then code, as HAPI's QueryStack.addSortOnToken.
  sortValue: (sql, desc) => (desc ? [sql`max(i.system)`, sql`max(i.value)`] : [sql`min(i.system)`, sql`min(i.value)`]),
  filterOps: ['eq', 'ne'],
  // text-only rows (CodeableConcept.text for :text) hold no code to differ
  compare: (sql, op, value, ctx, h) =>
    op === 'ne' ? sql`i.value is not null and not coalesce((${h.predicate(sql, value, ctx)}), false)` : h.predicate(sql, value, ctx),
})

// system|code and its descendants (:below) or ancestors (:above), one join over the closure table.
// HAPI needs both parts: HAPI-1239 without a code, HAPI-1240 without a system.
function hierarchyPredicate(sql: Sql, raw: string, param: string, modifier: 'above' | 'below'): Fragment {
  const parts = splitEscaped(raw, '|')
  const system = parts.length === 2 ? unescape(parts[0]) : ''
  const code = unescape(parts[parts.length - 1])
  if (parts.length > 2) throw invalid(`Invalid token value "${raw}" for parameter ${param}: more than one "|"`)
  if (code === '')
    throw invalid(`HAPI-1239: Invalid token specified for parameter ${param}:${modifier} - No code specified: ${system || '(missing)'}|(missing)`)
  if (system === '') throw invalid(`HAPI-1240: Invalid token specified for parameter ${param}:${modifier} - No system specified: (missing)|${code}`)
  const cs = codeSystemIdOf(sql, system)
  const related =
    modifier === 'below'
      ? sql`select t.descendant from term_closure t where t.cs_id = ${cs} and t.ancestor = ${code}`
      : sql`select t.ancestor from term_closure t where t.cs_id = ${cs} and t.descendant = ${code}`
  return sql`i.system = ${system} and i.value in (${related})`
}
