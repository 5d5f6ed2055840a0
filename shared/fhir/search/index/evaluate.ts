// Compiles a search parameter expression once into a function from a node to typed values: the fast
// JSON walk of typed-path.ts when the expression is a plain path, fhirpath.js otherwise, with
// `resolve() is T` answered from the reference's own URL (nothing is resolved while indexing).
// https://hl7.org/fhir/R4/searchparameter-definitions.html#SearchParameter.expression
import fhirpath from 'fhirpath'
import r4 from 'fhirpath/fhir-context/r4'
import { referenceTargetType } from '../types/reference'
import { compileTypedPath } from './typed-path'
import type { Evaluator } from '../types'
import type { TypedValue } from '../types/typed-value'

/** Values of the expression for `focus` (of FHIR type `focusType`) inside `resource`. */
export type { Evaluator }

const userInvocationTable = {
  refIs: {
    fn: (inputs: unknown[], type: string) => inputs.some((i) => referenceTargetType(fhirpath.util.valData(i)) === type),
    arity: { 1: ['String'] },
  },
}

/**
 * `expression` applies to nodes of `rootType`; `relative` ones (composite components) start with a
 * child name rather than the type. `fast: false` forces fhirpath.js (tests compare the two).
 */
export function compileExpression(expression: string, rootType: string, opts: { relative?: boolean; fast?: boolean } = {}): Evaluator {
  if (opts.fast !== false) {
    const path = compileTypedPath(expression, rootType, opts.relative)
    if (path) return path
  }
  return compileFhirPath(expression, rootType, !!opts.relative)
}

/** True when the expression takes the fast path. */
export function isFastPath(expression: string, rootType: string, relative = false): boolean {
  return compileTypedPath(expression, rootType, relative) !== undefined
}

function compileFhirPath(expression: string, rootType: string, relative: boolean): Evaluator {
  const text = expression.replace(/resolve\(\)\s+is\s+([A-Za-z]+)/g, "refIs('$1')")
  const fn = fhirpath.compile(relative ? { base: rootType, expression: text } : text, r4 as any, {
    resolveInternalTypes: false,
    userInvocationTable: userInvocationTable as any,
  })
  return (focus, _focusType, resource) => {
    const out: TypedValue[] = []
    for (const node of fn(focus, { resource, rootResource: resource }) as unknown[]) {
      const t = toTyped(node)
      if (t) out.push(t)
    }
    return out
  }
}

// fhirpath.js returns ResourceNodes (data plus the FHIR type at that path) or System values.
function toTyped(node: any): TypedValue | undefined {
  if (node === null || node === undefined) return undefined
  if (typeof node === 'object' && 'fhirNodeDataType' in node && 'data' in node) {
    const data = node.data
    if (data === null || data === undefined) return undefined
    // backbone elements are typed by their path, as in the element tables (`Observation.component`)
    // and System types by their FHIR primitive (Resource.id is System.String in the R4 model)
    const t: string | null = node.fhirNodeDataType
    const fhirType = t === 'BackboneElement' || t === 'Element' ? node.path : t?.startsWith('System.') ? t.charAt(7).toLowerCase() + t.slice(8) : t
    return { type: data?.resourceType ?? fhirType ?? systemType(data), value: data }
  }
  if (typeof node === 'object') {
    const value = fhirpath.resolveInternalTypes(node)
    return { type: systemType(value), value }
  }
  return { type: systemType(node), value: node }
}

function systemType(v: unknown): string {
  if (typeof v === 'boolean') return 'boolean'
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'decimal'
  if (typeof v === 'string') return 'string'
  return (v as any)?.resourceType ?? 'Element'
}
