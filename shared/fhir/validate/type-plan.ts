// Per-type validation plans, compiled once from the element tables: for every JSON property name a
// type may carry (choice variants and `_name` primitive companions expanded) what to check, plus the
// required elements. The walker in validate.ts only does map lookups against these.
// https://hl7.org/fhir/R4/json.html
import { type ElementDef, getTypeDef, typeDefinitions } from '../definitions/elements'
import { valueSetCodes } from '../definitions/value-set-codes'
import { type PrimitiveCheck, primitiveCheck } from './primitives'

/**
 * primitive: the value of a primitive element (`birthDate`);
 * companion: its `_birthDate` id/extension object (or parallel array);
 * complex: a data type or backbone element; resource: an inline resource (contained, Bundle.entry.resource).
 */
export type PropKind = 'primitive' | 'companion' | 'complex' | 'resource'

export interface PropPlan {
  /** The JSON property name as it appears in the object. */
  key: string
  /** Name in the element path: the property without a leading `_` (`valueQuantity`, `birthDate`). */
  pathName: string
  /** The other half of a primitive: `_given` for `given` and the reverse; undefined for non-primitives. */
  companion?: string
  element: ElementDef
  /** Type of this property (for a choice, the variant's type). */
  type: string
  kind: PropKind
  array: boolean
  check?: PrimitiveCheck
  /** Allowed codes of a required binding on a `code` element, when the value set expands. */
  codes?: ReadonlySet<string>
  /** Plan of the nested object (complex, and the Element shape for a companion), resolved lazily. */
  plan?: TypePlan
}

export interface RequiredElement {
  /** Path segment for the issue (`status`, `value[x]`). */
  name: string
  /** Any of these JSON properties makes the element present (value, `_value`, choice variants). */
  keys: string[]
}

export interface TypePlan {
  name: string
  resource: boolean
  props: Map<string, PropPlan>
  required: RequiredElement[]
}

const plans = new Map<string, TypePlan>()

// The definitions package adds Medplum's own elements to Meta; they are not R4, so a client that
// sends them gets "Unrecognized element" as from any R4 server. https://hl7.org/fhir/R4/resource.html#Meta
const NON_R4_META = new Set(['project', 'author', 'onBehalfOf', 'account', 'accounts', 'compartment', 'deleted'])

/** The plan of a type by name (`Patient`, `HumanName`, `Patient.contact`, `date`); undefined if unknown. */
export function typePlan(name: string): TypePlan | undefined {
  let plan = plans.get(name)
  if (!plan) {
    plan = compile(name)
    if (plan) plans.set(name, plan)
  }
  return plan
}

/** Compiles every plan up front (a few hundred ms at startup) so the first write does not pay for it. */
export function prepareTypePlans(): void {
  for (const name of typeDefinitions().keys()) typePlan(name)
}

/** The nested plan of a complex or companion property. */
export function nestedPlan(prop: PropPlan): TypePlan {
  if (!prop.plan) {
    const plan = typePlan(prop.type)
    if (!plan) throw new Error(`No element table for type ${prop.type} (${prop.element.path})`)
    prop.plan = plan
  }
  return prop.plan
}

function compile(name: string): TypePlan | undefined {
  const def = getTypeDef(name)
  if (!def) return undefined
  const resource = def.kind === 'resource'
  const plan: TypePlan = { name, resource, props: new Map(), required: [] }
  for (const [key, { element, type }] of def.properties) {
    if (name === 'Meta' && NON_R4_META.has(element.name)) continue
    const typeDef = getTypeDef(type)
    const primitive = typeDef?.kind === 'primitive-type'
    const kind: PropKind = type === 'Resource' ? 'resource' : primitive ? 'primitive' : 'complex'
    // A resource id has the `id` type's form, [A-Za-z0-9\-\.]{1,64}; the tables say System.String.
    // https://hl7.org/fhir/R4/resource.html#id
    const valueType = resource && key === 'id' ? 'id' : type
    // Elements held as XML attributes (Element.id, Extension.url) are plain strings: no `_name`.
    const attribute = element.representation?.includes('xmlAttr') ?? false
    const prop: PropPlan = { key, pathName: key, element, type: valueType, kind, array: element.array }
    if (primitive) {
      prop.check = primitiveCheck(valueType)
      if (!attribute) prop.companion = `_${key}`
      if (element.requiredBinding && valueType === 'code') prop.codes = valueSetCodes(element.requiredBinding)
      if (!attribute) {
        plan.props.set(prop.companion!, {
          key: prop.companion!,
          pathName: key,
          companion: key,
          element,
          type,
          kind: 'companion',
          array: element.array,
        })
      }
    }
    plan.props.set(key, prop)
  }
  for (const element of def.elements.values()) {
    if (element.min === 0 || (name === 'Meta' && NON_R4_META.has(element.name))) continue
    const keys: string[] = []
    for (const prop of plan.props.values()) if (prop.element === element) keys.push(prop.key)
    plan.required.push({ name: element.choice ? `${element.name}[x]` : element.name, keys })
  }
  return plan
}
