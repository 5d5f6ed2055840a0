// Token parameters, write side: a row per system|code pair of a code, Coding, CodeableConcept,
// Identifier, ContactPoint or boolean, with the display text :text searches (normalised as strings are).
// https://hl7.org/fhir/R4/search.html#token
import { systemForCode } from '../code-systems'
import type { ExtractContext, TypedValue } from '../typed-value'
import { normalizeString } from './string'

export interface TokenRow {
  code: string
  system: string | null
  value: string | null
  /** Display text for `:text`, normalised like string values; null when none. */
  text: string | null
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
