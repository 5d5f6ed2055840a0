// The `value` part of a FHIR Patch operation as the JSON element it becomes: a `value[x]`, a `resource`,
// or, for types Parameters cannot carry (anonymous backbone elements), nested parts named after the
// element's children. https://hl7.org/fhir/R4/fhirpatch.html (the "contact" example)
import { invalid } from '../../errors'
import { capitalize, getTypeDef, isPrimitiveType, type ElementDef } from '../definitions/elements'
import { hasProperty, readList, writeList, writeSingle, type ElementEntry } from './element-slot'
import { cloneJson } from '../format/json'

export interface PatchValue {
  /** FHIR type of the value: `date`, `HumanName`, `Patient.contact`, `Observation`. */
  type: string
  entry: ElementEntry
}

// Specializations of Quantity, accepted wherever a Quantity is. https://hl7.org/fhir/R4/datatypes.html#quantity
const QUANTITY_PROFILES = new Set(['Age', 'Count', 'Distance', 'Duration', 'MoneyQuantity', 'SimpleQuantity'])

/** Reads `part` as the value of `element`; throws `invalid` if it is missing or of the wrong type. */
export function readPatchValue(part: any, element: ElementDef, path: string): PatchValue {
  const value = rawValue(part, element, path)
  checkType(element, value.type, value.entry.value, path)
  return value
}

/** The JSON property `element` is written under when it holds a `type`: `deceasedBoolean` for a choice. */
export function elementKey(element: ElementDef, type: string): string {
  return element.choice ? element.name + capitalize(type) : element.name
}

function rawValue(part: any, element: ElementDef, path: string): PatchValue {
  const parameter = getTypeDef('Parameters.parameter')!
  for (const key of Object.keys(part ?? {})) {
    const name = key.replace(/^_/, '')
    const property = parameter.properties.get(name)
    if (property?.element.name !== 'value') continue
    const companion = part[`_${name}`] ?? null
    return { type: property.type, entry: { value: cloneJson(part[name]), companion: cloneJson(companion) } }
  }
  if (part?.resource) return { type: part.resource.resourceType, entry: { value: cloneJson(part.resource) } }
  if (Array.isArray(part?.part)) return anonymousValue(part.part, element, path)
  throw invalid(`The operation on ${path} has no value`, path)
}

/** Builds an element of `element`'s type from parts named after its children. */
function anonymousValue(parts: any[], element: ElementDef, path: string): PatchValue {
  if (element.types.length !== 1) throw invalid(`The type of ${element.path} cannot be inferred from parts`, path)
  const type = element.types[0]
  const def = getTypeDef(type)
  if (!def || def.kind === 'primitive-type' || def.abstract) throw invalid(`${element.path} cannot be given as parts`, path)
  const out: Record<string, any> = {}
  for (const part of parts) {
    const name = part?.name
    const child = def.elements.get(name) ?? def.properties.get(name)?.element
    if (!child) throw invalid(`${type} has no element "${name}"`, path)
    const value = readPatchValue(part, child, path)
    const key = elementKey(child, value.type)
    if (child.array) writeList(out, key, [...readList(out, key), value.entry])
    else if (child.choice ? child.types.some((t) => hasProperty(out, elementKey(child, t))) : hasProperty(out, key))
      throw invalid(`${element.path}.${child.name} is given twice`, path)
    else writeSingle(out, key, value.entry)
  }
  return { type, entry: { value: out } }
}

/**
 * "The type of the value must be correct for the place at which it will be added/inserted."
 * A primitive may stand in for another with the same JSON form (a `valueString` for a `code`), as
 * long as it matches the target type's regex. https://hl7.org/fhir/R4/fhirpatch.html
 */
function checkType(element: ElementDef, type: string, value: unknown, path: string): void {
  const ok = element.types.some((target) => accepts(target, type, value))
  if (!ok) throw invalid(`A ${type} cannot be put in ${element.path} (${element.types.join(' | ')})`, path)
}

function accepts(target: string, type: string, value: unknown): boolean {
  if (target === type) return true
  if (target === 'Quantity' && QUANTITY_PROFILES.has(type)) return true
  if (target === 'Resource' || target === 'DomainResource') return getTypeDef(type)?.kind === 'resource'
  if (!isPrimitiveType(target) || !isPrimitiveType(type)) return false
  if (value === undefined || value === null) return jsonForm(target) === jsonForm(type)
  if (typeof value !== jsonForm(target)) return false
  const regex = getTypeDef(target)!.regex
  return typeof value !== 'string' || !regex || regex.test(value)
}

/** How a primitive type is written in JSON. https://hl7.org/fhir/R4/json.html#primitive */
function jsonForm(type: string): 'boolean' | 'number' | 'string' {
  if (type === 'boolean') return 'boolean'
  if (type === 'integer' || type === 'decimal' || type === 'positiveInt' || type === 'unsignedInt') return 'number'
  return 'string'
}
