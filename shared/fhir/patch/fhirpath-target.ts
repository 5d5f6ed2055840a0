// Evaluates a FHIR Patch `path` with fhirpath.js and turns each matched node back into where it sits in
// the JSON tree (containing object, property, index), which is what the patch operations edit.
// https://hl7.org/fhir/R4/fhirpatch.html
import fhirpath from 'fhirpath'
import r4 from 'fhirpath/fhir-context/r4'
import { invalid } from '../../errors'
import { capitalize, getTypeDef, isPrimitiveType, type ElementDef, type TypeDef } from '../definitions/elements'
import { companionOf, type Slot } from './element-slot'

/** The fields of fhirpath.js's ResourceNode (src/types.js) that locate a node in its resource. */
interface ResourceNode {
  data: unknown
  parentResNode: ResourceNode | null
  path: string | null
  fhirNodeDataType: string | null
  propName: string | null
  index: number | null
}

/** A matched element: its FHIR type, where it is stored (none for the resource itself), its object if complex. */
export interface Target {
  type: TypeDef
  primitive: boolean
  slot?: Slot
  /** The element definition it was reached through, from its parent's type. */
  definition?: ElementDef
  element?: Record<string, any>
}

/** Every element `path` selects in `resource`, which is edited in place through the returned slots. */
export function selectTargets(resource: Record<string, any>, path: string): Target[] {
  let result: unknown
  try {
    result = fhirpath.evaluate(resource, delimitKeywords(path), undefined, r4, { resolveInternalTypes: false })
  } catch (e) {
    throw invalid(`Invalid FHIRPath "${path}": ${(e as Error).message}`, path)
  }
  if (!Array.isArray(result)) throw invalid(`FHIRPath "${path}" cannot be evaluated synchronously`, path)
  return result.map((node) => {
    if (!isResourceNode(node)) throw invalid(`FHIRPath "${path}" selects a computed value, not an element`, path)
    return toTarget(node, path)
  })
}

/** The object that holds the children of `target`: the element itself, or a primitive's `_name` companion. */
export function childContainer(target: Target, create: boolean): Record<string, any> | undefined {
  if (target.primitive) return target.slot && companionOf(target.slot, create)
  return target.element
}

/**
 * `Narrative.div` shares its name with the FHIRPath `div` operator, which fhirpath.js will not read as a
 * member name unless delimited; patches write `Patient.text.div`, so steps named like an operator get
 * backticks. Quoted strings are left alone. https://hl7.org/fhirpath/N1/#identifiers
 */
function delimitKeywords(path: string): string {
  return path.replace(/'(?:[^'\\]|\\.)*'|`(?:[^`\\]|\\.)*`|\.(div|mod|and|or|xor|implies)(?![\w(])/g, (m, word) => (word ? `.\`${word}\`` : m))
}

function isResourceNode(v: unknown): v is ResourceNode {
  return !!v && typeof v === 'object' && 'parentResNode' in v && 'propName' in v
}

function typeOf(node: ResourceNode, path: string): TypeDef {
  const type = (node.path && getTypeDef(node.path)) || (node.fhirNodeDataType && getTypeDef(node.fhirNodeDataType))
  if (!type) throw invalid(`FHIRPath "${path}" selects an element of unknown type`, path)
  return type
}

function toTarget(node: ResourceNode, path: string): Target {
  const type = typeOf(node, path)
  const primitive = isPrimitiveType(type.name)
  const element = !primitive && node.data && typeof node.data === 'object' ? (node.data as Record<string, any>) : undefined
  if (!node.parentResNode) {
    if (!element) throw invalid(`FHIRPath "${path}" does not select an element`, path)
    return { type, primitive, element }
  }
  const parent = toTarget(node.parentResNode, path)
  const container = childContainer(parent, false)
  if (!container || !node.propName) throw invalid(`FHIRPath "${path}" does not select an element`, path)
  const slot: Slot = { container, key: jsonKey(container, node), index: node.index ?? undefined }
  const definition = parent.type.elements.get(node.propName) ?? parent.type.properties.get(node.propName)?.element
  return { type, primitive, slot, definition, element }
}

/**
 * The JSON property of a node: fhirpath.js names a choice element by its base name (`deceased`),
 * while JSON carries the type suffix (`deceasedBoolean`). https://hl7.org/fhir/R4/json.html#choice
 */
function jsonKey(container: Record<string, any>, node: ResourceNode): string {
  const name = node.propName!
  if (name in container || `_${name}` in container) return name
  const suffixed = node.fhirNodeDataType ? name + capitalize(node.fhirNodeDataType) : undefined
  if (suffixed && (suffixed in container || `_${suffixed}` in container)) return suffixed
  const key = Object.keys(container).find((k) => k.length > name.length && k.startsWith(name) && /^[A-Z]/.test(k.slice(name.length)))
  return key ?? name
}
