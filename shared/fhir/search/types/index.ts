// Every search-parameter type, each registered by its own module (types/<type>.ts) when imported here:
// the index side (extraction, insertion) and the query side (predicates, sorting, driver ranking) read
// them through this module only. A new type is one new file and one import below.
import './string'
import './token'
import './reference'
import './uri'
import './number'
import './date'
import './quantity'
import './composite'
import type { SearchParamType } from '../registry'
import { type ParamType, registeredTypes } from './param-type'

export {
  type Evaluator,
  type ExtractState,
  type Extractor,
  type FilterOp,
  type Fragment,
  type Keyed,
  type ParamHandler,
  type ParamType,
  PREFIX_OPS,
  type PredicateContext,
} from './param-type'

/** The type's unit; undefined for a type with no index rows of its own (`special`). */
export function paramType(type: SearchParamType): ParamType | undefined {
  return registeredTypes.get(type)
}

/** The read side of a type (alias of paramType, as compile.ts and execute.ts ask it). */
export const handlerFor = paramType

/** Every registered type, in registration order. */
export function paramTypes(): Iterable<ParamType> {
  return registeredTypes.values()
}
