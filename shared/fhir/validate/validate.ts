// Structural validation of a resource against the R4 definitions, run on every write and by
// $validate: resourceType, known properties, JSON shape, primitive formats, cardinality, choice
// types, required code bindings. Invariants (FHIRPath constraints) are not checked.
// https://hl7.org/fhir/R4/json.html  https://hl7.org/fhir/R4/validation.html
import { normalizeNarratives } from '../format/xhtml-check'
import { AppError, type Issue } from '../../errors'
import { isResourceType } from '../definitions/resource-types'
import { nestedPlan, prepareTypePlans, type PropPlan, type TypePlan, typePlan } from './type-plan'

export interface ValidateOptions {
  /** The type the endpoint expects (`Patient` for PUT /Patient/1). */
  expectedType?: string
}

// The path is kept as a stack of segments (names and indexes) and only joined into a string when an
// issue is reported, so a valid resource costs no string building.
interface Walk {
  issues: Issue[]
  path: (string | number)[]
}

// Bounds for hostile input: a deeply nested body would overflow the stack of this recursive walk, and
// a huge invalid one would produce an outcome larger than the body.
const MAX_DEPTH = 200
const MAX_ISSUES = 1000

function expression(path: (string | number)[]): string {
  let out = ''
  for (const seg of path) out += typeof seg === 'number' ? `[${seg}]` : out === '' ? seg : `.${seg}`
  return out
}

function report(w: Walk, code: string, message: string, segment?: string): void {
  if (w.issues.length > MAX_ISSUES) return
  if (w.issues.length === MAX_ISSUES) {
    w.issues.push({ severity: 'error', code: 'too-costly', diagnostics: `Validation stopped after ${MAX_ISSUES} issues` })
    return
  }
  if (segment !== undefined) w.path.push(segment)
  const expr = expression(w.path)
  if (segment !== undefined) w.path.pop()
  w.issues.push({
    severity: 'error',
    code,
    diagnostics: expr ? `${message} at ${expr}` : message,
    expression: expr ? [expr] : undefined,
  })
}

/** A value quoted for a message, cut short: an invalid attachment may be megabytes. */
function preview(value: unknown): string {
  const s = String(JSON.stringify(typeof value === 'string' ? value.slice(0, 80) : value))
  return s.length > 80 ? `${s.slice(0, 80)}...` : s
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** Every structural problem of `resource`; empty when it is valid. */
export function validateResource(resource: unknown, opts?: ValidateOptions): Issue[] {
  const w: Walk = { issues: [], path: [] }
  if (!isObject(resource)) {
    report(w, 'structure', 'A resource must be a JSON object')
    return w.issues
  }
  const type = resource.resourceType
  if (opts?.expectedType !== undefined && type !== opts.expectedType) {
    // Same wording as HAPI FHIR, which clients already match on.
    const found = typeof type === 'string' ? type : preview(type)
    w.issues.push({
      severity: 'error',
      code: 'invalid',
      diagnostics: `Incorrect resource type found, expected "${opts.expectedType}" but found "${found}"`,
      expression: ['resourceType'],
    })
    return w.issues
  }
  checkResource(w, resource)
  return w.issues
}

/** Compiles the validation plans of every type now, for startup, instead of on first use. */
export function prepareValidation(): void {
  prepareTypePlans()
}

/**
 * Throws an `invalid` AppError carrying all issues when any is an error or fatal. The gate of every
 * write: a valid resource's narrative divs get the XHTML namespace declared, as HAPI FHIR stores them.
 */
export function assertValid(resource: unknown, opts?: ValidateOptions): void {
  const issues = validateResource(resource, opts)
  const first = issues.find((i) => i.severity === 'error' || i.severity === 'fatal')
  if (first) throw new AppError('invalid', first.diagnostics, { issues })
  normalizeNarratives(resource)
}

// A resource anywhere: the root, contained[i], Bundle.entry[i].resource, Parameters.parameter[i].resource.
// At the root the path starts with the type name; nested, it continues the parent's path.
// https://hl7.org/fhir/R4/json.html#resources
function checkResource(w: Walk, resource: Record<string, unknown>): void {
  const type = resource.resourceType
  if (type === undefined) {
    report(w, 'required', 'A resource must have a resourceType', 'resourceType')
    return
  }
  const plan = typeof type === 'string' && isResourceType(type) ? typePlan(type) : undefined
  if (!plan) {
    report(w, 'invalid', `Unknown resource type ${preview(type)}`, 'resourceType')
    return
  }
  const root = w.path.length === 0
  if (root) w.path.push(type as string)
  checkObject(w, resource, plan)
  if (root) w.path.pop()
}

// One JSON object against the plan of its type: every property known and well shaped, at most one
// variant per choice element, required elements present, not empty.
function checkObject(w: Walk, obj: Record<string, unknown>, plan: TypePlan): void {
  if (w.path.length > MAX_DEPTH) {
    report(w, 'too-costly', `Elements nested deeper than ${MAX_DEPTH} levels are not validated`)
    return
  }
  let count = 0
  let choices: PropPlan[] | undefined
  for (const key in obj) {
    const value = obj[key]
    // A JS object built in code may carry undefined: absent, as JSON.stringify would drop it.
    if (value === undefined) continue
    count++
    const prop = plan.props.get(key)
    if (prop === undefined) {
      if (!(plan.resource && key === 'resourceType')) report(w, 'structure', `Unrecognized element '${key}'`, key)
      continue
    }
    // A choice element appears as one variant at most; valueQuantity and _valueString are two.
    // https://hl7.org/fhir/R4/formats.html#choice
    if (prop.element.choice) {
      if (choices === undefined) choices = [prop]
      else {
        for (const other of choices) {
          if (other.element === prop.element && other.pathName !== prop.pathName) {
            report(w, 'structure', `Only one of ${other.pathName} and ${prop.pathName} may be present (${prop.element.name}[x])`, prop.pathName)
          }
        }
        choices.push(prop)
      }
    }
    w.path.push(prop.pathName)
    checkProperty(w, obj, prop, value)
    w.path.pop()
  }
  if (count === 0) report(w, 'structure', 'Empty objects are not allowed')
  for (const req of plan.required) {
    let present = false
    for (const k of req.keys) if (obj[k] !== undefined) present = true
    if (!present) report(w, 'required', `Missing required element '${req.name}'`, req.name)
  }
}

// No empty objects, arrays or values; null only inside the parallel arrays of a repeating primitive
// and its `_name` companion. https://hl7.org/fhir/R4/json.html#primitive
function checkProperty(w: Walk, obj: Record<string, unknown>, prop: PropPlan, value: unknown): void {
  if (value === null) {
    report(w, 'structure', 'null is not allowed')
    return
  }
  if (!prop.array) {
    if (Array.isArray(value)) report(w, 'structure', 'Must be a single value, not an array (the element does not repeat)')
    else checkItem(w, prop, value)
    return
  }
  if (!Array.isArray(value)) {
    report(w, 'structure', 'Must be an array (the element repeats)')
    return
  }
  if (value.length === 0) {
    report(w, 'structure', 'Empty arrays are not allowed')
    return
  }
  // Parallel arrays: `given` and `_given` line up by index, null where one side has nothing.
  let parallel: unknown[] | undefined
  if (prop.companion !== undefined) {
    const other = obj[prop.companion]
    if (Array.isArray(other)) {
      parallel = other
      if (prop.kind === 'companion' && other.length !== value.length) {
        report(w, 'structure', `Must have as many items as ${prop.pathName} (${value.length} vs ${other.length})`)
      }
    }
  }
  for (let i = 0; i < value.length; i++) {
    const item = value[i]
    w.path.push(i)
    if (item === null) {
      if (parallel === undefined || parallel[i] == null) report(w, 'structure', 'null is only allowed where the parallel value or _extension array has an item')
    } else checkItem(w, prop, item)
    w.path.pop()
  }
}

function checkItem(w: Walk, prop: PropPlan, value: unknown): void {
  switch (prop.kind) {
    case 'primitive': {
      // A decimal kept as written (JSON.rawJSON, see format/json.ts) is a number, not an object.
      if (typeof value === 'object' && !JSON.isRawJSON(value)) {
        report(w, 'structure', `Must be a primitive ${prop.type} value, not an object`)
        return
      }
      const err = prop.check!(value)
      if (err !== undefined) report(w, 'value', `Invalid ${prop.type} ${preview(value)}: ${err}`)
      else if (prop.codes !== undefined && !prop.codes.has(value as string)) {
        report(w, 'code-invalid', `Code ${preview(value)} is not in the required value set ${prop.element.requiredBinding}`)
      }
      return
    }
    case 'resource':
      if (isObject(value)) checkResource(w, value)
      else report(w, 'structure', 'Must be a JSON object (a resource)')
      return
    default:
      if (isObject(value)) checkObject(w, value, nestedPlan(prop))
      else report(w, 'structure', `Must be a JSON object (${prop.kind === 'companion' ? 'id and extension of a primitive' : prop.type})`)
  }
}
