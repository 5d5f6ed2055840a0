// FHIR Patch: a Parameters resource of `operation`s (add, insert, delete, replace, move) addressed by
// FHIRPath, applied in order to a copy of the resource. https://hl7.org/fhir/R4/fhirpatch.html
import { invalid } from '../../errors'
import type { ElementDef } from '../definitions/elements'
import { hasProperty, pruneEmpty, readList, writeList, writeSingle, type Slot } from './element-slot'
import { childContainer, selectTargets, type Target } from './fhirpath-target'
import { elementKey, readPatchValue } from './patch-value'
import { cloneJson } from '../format/json'

type OperationType = 'add' | 'insert' | 'delete' | 'replace' | 'move'

interface Operation {
  type: OperationType
  path: string
  name?: string
  value?: any
  index?: number
  source?: number
  destination?: number
}

// Which parts each operation type needs, from the operations table of the spec.
const REQUIRED: Record<OperationType, (keyof Operation)[]> = {
  add: ['path', 'name', 'value'],
  insert: ['path', 'value', 'index'],
  delete: ['path'],
  replace: ['path', 'value'],
  move: ['path', 'source', 'destination'],
}

/** Applies the operations of `params` to a copy of `resource`; any operation that cannot apply throws `invalid`. */
export function applyFhirPatch(resource: any, params: any): any {
  if (params?.resourceType !== 'Parameters') throw invalid('A FHIR Patch body must be a Parameters resource')
  const out = cloneJson(resource)
  for (const parameter of params.parameter ?? []) {
    if (parameter?.name !== 'operation') throw invalid(`Unexpected parameter "${parameter?.name}" in FHIR Patch`)
    applyOperation(out, readOperation(parameter))
  }
  // Deletes can leave `{}` or `[]` behind; JSON never carries them. https://hl7.org/fhir/R4/json.html
  return pruneEmpty(out)
}

function readOperation(parameter: any): Operation {
  const op: Partial<Operation> = {}
  for (const part of parameter.part ?? []) {
    const name: string = part?.name
    if (Object.hasOwn(op, name)) throw invalid(`Part "${name}" is repeated in a FHIR Patch operation`)
    if (name === 'type') op.type = part.valueCode
    else if (name === 'path' || name === 'name') op[name] = part.valueString
    else if (name === 'index' || name === 'source' || name === 'destination') op[name] = part.valueInteger
    else if (name === 'value') op.value = part
    else throw invalid(`Unknown part "${name}" in a FHIR Patch operation`)
  }
  if (!op.type || !(op.type in REQUIRED)) throw invalid(`Unknown FHIR Patch operation type "${op.type}"`)
  for (const key of REQUIRED[op.type]) {
    if (op[key] === undefined || op[key] === null) throw invalid(`A FHIR Patch ${op.type} operation needs a "${key}" part`, op.path)
  }
  return op as Operation
}

function applyOperation(resource: Record<string, any>, op: Operation): void {
  switch (op.type) {
    case 'add':
      return add(resource, op)
    case 'insert':
      return insert(resource, op)
    case 'delete':
      return remove(resource, op)
    case 'replace':
      return replace(resource, op)
    case 'move':
      return move(resource, op)
  }
}

/** "The FHIRPath statement must return a single element." */
function single(resource: Record<string, any>, op: Operation, verb: string): Target {
  const targets = selectTargets(resource, op.path)
  if (targets.length === 0) throw invalid(`No content found at ${op.path} when ${verb}`, op.path)
  if (targets.length > 1) throw invalid(`${op.path} matches ${targets.length} elements when ${verb}; it must match one`, op.path)
  return targets[0]
}

/** add: appends `value` as child `name` of the element at `path`; a non-repeating child must not exist yet. */
function add(resource: Record<string, any>, op: Operation): void {
  const target = single(resource, op, 'adding')
  const name = op.name!
  const element = target.type.elements.get(name) ?? target.type.properties.get(name)?.element
  if (!element) throw invalid(`${target.type.name} has no element "${name}"`, op.path)
  const value = readPatchValue(op.value, element, op.path)
  const key = elementKey(element, value.type)
  if (name !== element.name && name !== key) throw invalid(`A ${value.type} cannot be added as "${name}"`, op.path)
  const container = childContainer(target, true)!
  if (element.array) return writeList(container, key, [...readList(container, key), value.entry])
  const taken = element.choice ? element.types.some((t) => hasProperty(container, elementKey(element, t))) : hasProperty(container, key)
  if (taken) throw invalid(`${op.path}.${element.name} already exists; use replace`, op.path)
  writeSingle(container, key, value.entry)
}

/** insert: puts `value` at `index` (0 based, at most the list's length) of the list at `path`. */
function insert(resource: Record<string, any>, op: Operation): void {
  const list = selectList(resource, op)
  const value = readPatchValue(op.value, list.definition, op.path)
  const key = elementKey(list.definition, value.type)
  const entries = readList(list.container, key)
  if (!Number.isInteger(op.index) || op.index! < 0 || op.index! > entries.length)
    throw invalid(`Index ${op.index} is outside ${op.path} (${entries.length} elements)`, op.path)
  entries.splice(op.index!, 0, value.entry)
  writeList(list.container, key, entries)
}

/** delete: removes the element at `path` "if found"; a path matching nothing is not an error. */
function remove(resource: Record<string, any>, op: Operation): void {
  const targets = selectTargets(resource, op.path)
  if (targets.length === 0) return
  if (targets.length > 1) throw invalid(`${op.path} matches ${targets.length} elements; only a single element can be deleted`, op.path)
  const slot = slotOf(targets[0], op)
  if (slot.index === undefined) return writeSingle(slot.container, slot.key, undefined)
  const entries = readList(slot.container, slot.key)
  entries.splice(slot.index, 1)
  writeList(slot.container, slot.key, entries)
}

/**
 * replace: the element at `path` becomes `value`, whole: a primitive's id and extensions are those of
 * the new value. A choice element may change type (`valueQuantity` -> `valueString`).
 */
function replace(resource: Record<string, any>, op: Operation): void {
  const target = single(resource, op, 'replacing')
  const slot = slotOf(target, op)
  if (!target.definition) throw invalid(`The element at ${op.path} has no definition`, op.path)
  const value = readPatchValue(op.value, target.definition, op.path)
  if (slot.index !== undefined) {
    const entries = readList(slot.container, slot.key)
    entries[slot.index] = value.entry
    return writeList(slot.container, slot.key, entries)
  }
  writeSingle(slot.container, slot.key, undefined)
  writeSingle(slot.container, elementKey(target.definition, value.type), value.entry)
}

/** move: within the list at `path`, takes the element at `source` and puts it at `destination`. */
function move(resource: Record<string, any>, op: Operation): void {
  const list = selectList(resource, op)
  const entries = readList(list.container, list.key)
  for (const [label, at] of [
    ['source', op.source],
    ['destination', op.destination],
  ] as const) {
    if (!Number.isInteger(at) || at! < 0 || at! >= entries.length)
      throw invalid(`The ${label} index ${at} is outside ${op.path} (${entries.length} elements)`, op.path)
  }
  const [moved] = entries.splice(op.source!, 1)
  entries.splice(op.destination!, 0, moved)
  writeList(list.container, list.key, entries)
}

function slotOf(target: Target, op: Operation): Slot {
  if (!target.slot) throw invalid(`${op.path} is the resource itself`, op.path)
  return target.slot
}

/**
 * The repeating element that `path` names, for insert and move. The path selects the list's items, so
 * they must all sit in one property; when the list is empty, the path's last step names it under its parent.
 */
function selectList(resource: Record<string, any>, op: Operation): { container: Record<string, any>; key: string; definition: ElementDef } {
  const targets = selectTargets(resource, op.path)
  if (targets.length > 0) {
    const first = slotOf(targets[0], op)
    const same = targets.every((t) => t.slot?.container === first.container && t.slot.key === first.key && t.slot.index !== undefined)
    if (!same || !targets[0].definition?.array) throw invalid(`${op.path} is not a list`, op.path)
    return { container: first.container, key: first.key, definition: targets[0].definition }
  }
  const step = /^(.+)\.([A-Za-z][A-Za-z0-9]*)$/.exec(op.path)
  if (!step) throw invalid(`No content found at ${op.path}`, op.path)
  const parent = single(resource, { ...op, path: step[1] }, op.type === 'insert' ? 'inserting' : 'moving')
  const definition = parent.type.elements.get(step[2])
  if (!definition?.array) throw invalid(`${op.path} is not a list`, op.path)
  return { container: childContainer(parent, true)!, key: definition.name, definition }
}
