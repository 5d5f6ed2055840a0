// FHIRPath text of search parameter expressions: the R4 `as` forms rewritten to ofType() (fhirpath.js
// rejects `as` on collections, as @medplum's definitions already do), and multi-base unions cut down to
// the parts for one base type. https://hl7.org/fhir/R4/searchparameter-definitions.html#SearchParameter.expression
import { isResourceType } from '../definitions/resource-types'

/** `(X as T)`, `X as T` and `X.as(T)` become `X.ofType(T)`. */
export function rewriteAs(expression: string): string {
  return expression.replace(/\.as\(\s*([A-Za-z]+)\s*\)/g, '.ofType($1)').replace(/([A-Za-z_%][\w.%]*)\s+as\s+([A-Za-z]+)\b/g, '$1.ofType($2)')
}

/** Splits at the top-level `|` operators, leaving those inside parentheses and string literals. */
export function splitUnion(expression: string): string[] {
  const parts: string[] = []
  let depth = 0
  let quote = false
  let start = 0
  for (let i = 0; i < expression.length; i++) {
    const c = expression[i]
    if (quote) {
      if (c === '\\') i++
      else if (c === "'") quote = false
    } else if (c === "'") quote = true
    else if (c === '(') depth++
    else if (c === ')') depth--
    else if (c === '|' && depth === 0) {
      parts.push(expression.slice(start, i).trim())
      start = i + 1
    }
  }
  parts.push(expression.slice(start).trim())
  return parts.filter((p) => p.length > 0)
}

/** The leading identifier of a union part once any opening parentheses are skipped: `Patient` in `(Patient.x)`. */
export function rootOf(part: string): string | undefined {
  return /^[\s(]*([A-Za-z_][A-Za-z0-9_]*)/.exec(part)?.[1]
}

/**
 * The parts of a (multi-base) expression that apply to `base`, joined back with `|`. Parts rooted at
 * `Resource` or `DomainResource` apply to every type and are re-rooted at `base`; parts that start with
 * an element name (R4 InsurancePlan-name is `name | alias`) are relative to `base`.
 */
export function expressionForBase(expression: string, base: string): string | undefined {
  const parts: string[] = []
  for (const part of splitUnion(rewriteAs(expression))) {
    const root = rootOf(part)
    if (root === undefined) continue
    if (root === base) parts.push(part)
    else if (root === 'Resource' || root === 'DomainResource') parts.push(part.replace(root, base))
    else if (!isResourceType(root)) parts.push(part.replace(root, `${base}.${root}`))
  }
  return parts.length ? parts.join(' | ') : undefined
}
