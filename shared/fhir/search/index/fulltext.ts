// Text for _text (the narrative) and _content (the resource's `string` values), indexed with
// PostgreSQL's full-text search. https://hl7.org/fhir/R4/search.html#text
import { getTypeDef, type TypeDef } from '../../definitions/elements'

const TAG = /<[^>]*>/g
const ENTITY = /&(amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);/g

function decodeEntity(_m: string, e: string): string {
  switch (e) {
    case 'amp':
      return '&'
    case 'lt':
      return '<'
    case 'gt':
      return '>'
    case 'quot':
      return '"'
    case 'apos':
      return "'"
    default:
      return String.fromCodePoint(e[1] === 'x' ? Number.parseInt(e.slice(2), 16) : Number(e.slice(1)))
  }
}

/** The narrative's text without markup. */
export function narrativeText(resource: any): string {
  const div = resource?.text?.div
  return typeof div === 'string' ? div.replace(TAG, ' ').replace(ENTITY, decodeEntity) : ''
}

/**
 * The text `_content` searches, as HAPI FHIR indexes it: every value of an element of the `string`
 * data type, wherever it sits (names, addresses, displays, CodeableConcept.text, identifier values,
 * extension values, contained resources). Codes, ids, references, uris, dates, markdown, base64 data
 * and the narrative (`_text`'s) are not part of it. Distinct values, space-separated: a repeated value
 * (a code's display and its text) is written once, as its lexemes are the same.
 */
export function contentText(resource: any): string {
  const out = new Set<string>()
  const plan = typeof resource?.resourceType === 'string' ? contentPlan(resource.resourceType) : undefined
  if (plan) walk(resource, plan, out, 0)
  return [...out].join(' ')
}

/** What a property holds for `_content`: its strings, resources (their own types' strings), or elements of a type. */
type ContentProp = { kind: 'string' } | { kind: 'resource' } | { kind: 'element'; type: string }

/** Each type's properties that can hold content, from its definition, built on first use. */
const plans = new Map<string, Map<string, ContentProp> | null>()

function contentPlan(type: string): Map<string, ContentProp> | undefined {
  let plan = plans.get(type)
  if (plan === undefined) {
    const def = getTypeDef(type)
    plan = def ? planOf(def) : null
    plans.set(type, plan)
  }
  return plan ?? undefined
}

function planOf(def: TypeDef): Map<string, ContentProp> {
  const plan = new Map<string, ContentProp>()
  for (const [k, prop] of def.properties) {
    // Ids (of the resource or of an element) and Reference.reference are typed `string` in the R4
    // definitions but are identifiers, not text; HAPI's model does not index them as content either.
    if (k === 'id' || (k === 'reference' && def.name === 'Reference')) continue
    if (prop.type === 'string') plan.set(k, { kind: 'string' })
    else if (prop.type === 'Resource') plan.set(k, { kind: 'resource' })
    else {
      const child = getTypeDef(prop.type)
      if (child && child.kind !== 'primitive-type') plan.set(k, { kind: 'element', type: prop.type })
    }
  }
  return plan
}

function walk(node: Record<string, unknown>, plan: Map<string, ContentProp>, out: Set<string>, depth: number): void {
  if (depth > 64) return
  for (const k in node) {
    const prop = plan.get(k)
    if (!prop) continue
    const v = node[k]
    if (prop.kind === 'string') {
      if (typeof v === 'string') out.add(v)
      else if (Array.isArray(v)) for (const s of v) if (typeof s === 'string') out.add(s)
      continue
    }
    if (typeof v !== 'object' || v === null) continue
    const items = Array.isArray(v) ? v : [v]
    if (prop.kind === 'resource') {
      // contained resources, Bundle entries, Parameters' resources: their own type's strings
      for (const r of items) {
        const rdef = r && typeof r.resourceType === 'string' ? getTypeDef(r.resourceType) : undefined
        if (rdef?.kind === 'resource') walk(r, contentPlan(rdef.name) as Map<string, ContentProp>, out, depth + 1)
      }
      continue
    }
    const child = contentPlan(prop.type) as Map<string, ContentProp>
    for (const item of items) if (item && typeof item === 'object') walk(item, child, out, depth + 1)
  }
}
