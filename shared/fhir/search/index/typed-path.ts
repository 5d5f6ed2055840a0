// The fast path of index extraction: search parameter expressions that are plain paths (`Patient.name.given`,
// `Observation.value.ofType(Quantity)`, `Observation.subject.where(resolve() is Patient)`,
// `Patient.telecom.where(system='phone')`) compiled once into per-type property lookups from the element
// tables, and walked over the JSON directly. Anything else returns undefined and goes to fhirpath.js.
// https://hl7.org/fhir/R4/fhirpath.html (the subset), https://hl7.org/fhir/R4/json.html#choice (value[x])
import r4 from 'fhirpath/fhir-context/r4'
import { capitalize, type ElementDef, getTypeDef } from '../../definitions/elements'
import { referenceTargetType } from '../types/reference'
import type { TypedValue } from '../types/typed-value'
import { splitUnion } from '../expression'

type Step =
  | { kind: 'child'; name: string }
  | { kind: 'ofType'; type: string }
  | { kind: 'resolveIs'; type: string }
  | { kind: 'equals'; name: string; literal: string }

interface Accessor {
  prop: string
  /** Static type of the values (`*` while planning marks an inline resource, which is left to fhirpath.js). */
  type: string
  element: ElementDef
}

type Op = { kind: 'child'; byType: Map<string, Accessor[]> } | { kind: 'filter'; test: (n: TypedValue) => boolean }

export type PathEvaluator = (focus: unknown, focusType: string) => TypedValue[]

const typeParent: Record<string, string> = (r4 as any).type2Parent

/**
 * Compiles `expression` for nodes of `rootType`. `relative` expressions start with a child name (composite
 * components); otherwise each union part starts with the root type's name. Undefined when the
 * expression is outside the subset.
 */
export function compileTypedPath(expression: string, rootType: string, relative = false): PathEvaluator | undefined {
  const plans: Op[][] = []
  for (const part of splitUnion(expression)) {
    const steps = parsePath(part, relative ? undefined : rootType)
    if (!steps) return undefined
    const ops = plan(steps, rootType)
    if (!ops) return undefined
    plans.push(ops)
  }
  // Most parameters select nothing from a given resource: looking up the first properties before
  // building any node makes those cheap.
  const firsts = plans.map((ops) => (ops[0]?.kind === 'child' ? ops[0].byType.get(rootType)?.map((a) => a.prop) : undefined))
  if (plans.length === 1) {
    const ops = plans[0]!
    const first = firsts[0]
    return (focus, focusType) => (first && focusType === rootType && !hasAny(focus, first) ? NONE : run(ops, focus, focusType))
  }
  return (focus, focusType) => {
    const out: TypedValue[] = []
    for (const ops of plans) for (const v of run(ops, focus, focusType)) out.push(v)
    return out
  }
}

const NONE: TypedValue[] = Object.freeze([]) as unknown as TypedValue[]

function hasAny(focus: any, props: string[]): boolean {
  for (const p of props) if (focus[p] !== undefined) return true
  return false
}

// The focus is not wrapped as a node of its own: a first child step reads its properties directly (most
// expressions start with one), so a parameter that selects values builds only the nodes it returns.
function run(ops: Op[], focus: unknown, focusType: string): TypedValue[] {
  let nodes: TypedValue[]
  let i = 0
  const first = ops[0]
  if (first?.kind === 'child') {
    nodes = []
    const accessors = first.byType.get(focusType)
    if (accessors) children(accessors, focus, nodes)
    if (nodes.length === 0) return nodes
    i = 1
  } else nodes = [{ type: focusType, value: focus }]
  for (; i < ops.length; i++) {
    const op = ops[i]!
    if (op.kind === 'filter') {
      nodes = nodes.filter(op.test)
      continue
    }
    const next: TypedValue[] = []
    for (const node of nodes) {
      const accessors = op.byType.get(node.type)
      if (accessors) children(accessors, node.value, next)
    }
    if (next.length === 0) return next
    nodes = next
  }
  return nodes
}

/** The values of `accessors` on `value`, each array item a node of its own, appended to `out`. */
function children(accessors: Accessor[], value: any, out: TypedValue[]): void {
  for (const a of accessors) {
    const v = value[a.prop]
    if (v === undefined || v === null) continue
    if (Array.isArray(v)) {
      for (const item of v) if (item !== null && item !== undefined) out.push(typed(a, item))
    } else out.push(typed(a, v))
  }
}

function typed(a: Accessor, value: any): TypedValue {
  return { type: a.type, value, element: a.element }
}

// Type names as an expression may spell them: `ofType(DateTime)` in the R4 Observation-code-value-date.
function fhirTypeName(name: string): string {
  if (getTypeDef(name)) return name
  const lower = name.charAt(0).toLowerCase() + name.slice(1)
  return getTypeDef(lower) ? lower : name
}

function isA(type: string, wanted: string): boolean {
  for (let t: string | undefined = type; t; t = typeParent[t]) if (t === wanted) return true
  return false
}

function plan(steps: Step[], rootType: string): Op[] | undefined {
  let types = new Set([rootType])
  const ops: Op[] = []
  for (const step of steps) {
    if (step.kind === 'child') {
      const byType = new Map<string, Accessor[]>()
      const out = new Set<string>()
      for (const t of types) {
        const el = getTypeDef(t)?.elements.get(step.name)
        if (!el) continue
        const accessors: Accessor[] = el.choice
          ? el.types.map((code) => ({ prop: step.name + capitalize(code), type: code, element: el }))
          : [{ prop: step.name, type: el.types[0] === 'Resource' ? '*' : el.types[0]!, element: el }]
        byType.set(t, accessors)
        for (const a of accessors) out.add(a.type)
      }
      if (out.has('*')) return undefined // inline resources: types known only at run time
      if (byType.size === 0) return undefined
      ops.push({ kind: 'child', byType })
      types = out
    } else if (step.kind === 'ofType') {
      const wanted = fhirTypeName(step.type)
      const keep = new Set([...types].filter((t) => isA(t, wanted)))
      ops.push({ kind: 'filter', test: (n) => keep.has(n.type) })
      types = keep
    } else if (step.kind === 'resolveIs') {
      const wanted = step.type
      ops.push({ kind: 'filter', test: (n) => n.type === 'Reference' && referenceTargetType(n.value) === wanted })
    } else {
      const { name, literal } = step
      ops.push({ kind: 'filter', test: (n) => n.value?.[name] === literal })
    }
  }
  return ops
}

// path := term ('.' step)* ; term := '(' path ')' | name ; step := name | ofType(T) | as(T) | where(cond)
// cond := resolve() is T | name = 'literal'. Grouping parentheses around a path do not change it.
function parsePath(text: string, rootType: string | undefined): Step[] | undefined {
  const tokens = text.match(/'(?:[^'\\]|\\.)*'|[A-Za-z_][A-Za-z0-9_]*|[().=]|\S/g) ?? []
  let i = 0
  let expectRoot = rootType !== undefined
  const steps: Step[] = []
  const peek = () => tokens[i]
  const ident = (t: string | undefined) => t !== undefined && /^[A-Za-z_]/.test(t)

  function call(name: string): boolean {
    if (peek() !== '(') return false
    i++
    if (name === 'ofType' || name === 'as') {
      const t = tokens[i++]
      if (!ident(t) || tokens[i++] !== ')') return false
      steps.push({ kind: 'ofType', type: t! })
      return true
    }
    if (name !== 'where') return false
    if (peek() === 'resolve' && tokens[i + 1] === '(' && tokens[i + 2] === ')' && tokens[i + 3] === 'is') {
      const t = tokens[i + 4]
      if (!ident(t) || tokens[i + 5] !== ')') return false
      i += 6
      steps.push({ kind: 'resolveIs', type: t! })
      return true
    }
    const name2 = tokens[i]
    const lit = tokens[i + 2]
    if (!ident(name2) || tokens[i + 1] !== '=' || !lit?.startsWith("'") || tokens[i + 3] !== ')') return false
    i += 4
    steps.push({ kind: 'equals', name: name2!, literal: lit.slice(1, -1).replace(/\\(.)/g, '$1') })
    return true
  }

  function term(): boolean {
    const t = tokens[i]
    if (t === '(') {
      i++
      if (!path() || tokens[i++] !== ')') return false
      return true
    }
    if (!ident(t)) return false
    i++
    if (expectRoot) {
      expectRoot = false
      return t === rootType
    }
    if (peek() === '(') return call(t!)
    steps.push({ kind: 'child', name: t! })
    return true
  }

  function path(): boolean {
    if (!term()) return false
    while (peek() === '.') {
      i++
      const t = tokens[i]
      if (!ident(t)) return false
      i++
      if (peek() === '(') {
        if (!call(t!)) return false
      } else steps.push({ kind: 'child', name: t! })
    }
    return true
  }

  if (!path() || i !== tokens.length) return undefined
  return steps
}
