// Operation input and output as Parameters: the input from a POSTed Parameters resource or from the
// query string (GET, or simple parameters on POST), and a builder for the Parameters answer.
// https://hl7.org/fhir/R4/parameters.html
import { AppError, invalid } from '../../errors'
import type { FhirRequest } from '../request'

export interface ParameterPart {
  name: string
  [value: string]: unknown
}

export class OperationInput {
  constructor(
    private readonly parts: ParameterPart[],
    /** The body when it is a resource other than Parameters (e.g. $validate given the resource itself). */
    readonly resource?: any,
  ) {}

  static of(req: FhirRequest): OperationInput {
    const parts: ParameterPart[] = []
    // Every query parameter is an operation parameter (an operation ignores names it does not define).
    for (const [name, value] of req.query) parts.push({ name, valueString: value })
    const body = req.body as any
    if (body === undefined || body === null) return new OperationInput(parts)
    if (typeof body !== 'object' || Array.isArray(body)) throw new AppError('invalid', 'The operation body must be a Parameters resource')
    if (body.resourceType !== 'Parameters') return new OperationInput(parts, body)
    return new OperationInput([...parts, ...parametersOf(body)])
  }

  has(name: string): boolean {
    return this.parts.some((p) => p.name === name)
  }

  all(name: string): ParameterPart[] {
    return this.parts.filter((p) => p.name === name)
  }

  /** The parameter's value as written (the first value[x], or the query-string text). */
  value(name: string): unknown {
    const p = this.parts.find((x) => x.name === name)
    return p ? valueOf(p) : undefined
  }

  values(name: string): unknown[] {
    return this.all(name).map(valueOf)
  }

  string(name: string): string | undefined {
    const v = this.value(name)
    return v === undefined ? undefined : String(v)
  }

  boolean(name: string): boolean | undefined {
    const v = this.value(name)
    if (v === undefined) return undefined
    if (v === true || v === 'true') return true
    if (v === false || v === 'false') return false
    throw new AppError('invalid', `Parameter "${name}" must be a boolean, not "${String(v)}"`)
  }

  integer(name: string): number | undefined {
    const v = this.value(name)
    if (v === undefined) return undefined
    const n = typeof v === 'number' ? v : /^-?\d+$/.test(String(v)) ? Number(v) : Number.NaN
    if (!Number.isSafeInteger(n)) throw new AppError('invalid', `Parameter "${name}" must be an integer, not "${String(v)}"`)
    return n
  }

  /** A resource-valued parameter (`resource`, or e.g. `meta` as valueMeta through value()). */
  resourceOf(name: string): any {
    return this.parts.find((p) => p.name === name)?.resource
  }
}

/**
 * The parameters of a Parameters body, checked before any operation reads them: an array of objects each
 * with a name, their parts alike (400 otherwise; `"parameter": 5` was a 500 in every operation).
 */
export function parametersOf(body: { parameter?: unknown }): ParameterPart[] {
  const list = body.parameter ?? []
  assertParameters(list, 'Parameters.parameter')
  return list
}

function assertParameters(list: unknown, path: string): asserts list is ParameterPart[] {
  if (!Array.isArray(list)) throw invalid(`${path} must be an array of parameters`, path)
  for (const [i, p] of list.entries()) {
    if (p === null || typeof p !== 'object' || Array.isArray(p) || typeof p.name !== 'string')
      throw invalid(`${path}[${i}] must be a parameter: an object with a name`, `${path}[${i}]`)
    if (p.part !== undefined) assertParameters(p.part, `${path}[${i}].part`)
  }
}

function valueOf(p: ParameterPart): unknown {
  for (const k of Object.keys(p)) if (k.startsWith('value')) return p[k]
  if (p.resource !== undefined) return p.resource
  return undefined
}

/** A Parameters resource from parts, e.g. `parameters({ name: 'count', valueInteger: 3 })`. */
export function parameters(...parts: ParameterPart[]): { resourceType: 'Parameters'; parameter: ParameterPart[] } {
  return { resourceType: 'Parameters', parameter: parts }
}
