// The read-side handler of each search-parameter type.
import type { ParamHandler } from './param-handler'
import { compositeHandler } from './params/composite'
import { dateHandler } from './params/date'
import { numberHandler } from './params/number'
import { quantityHandler } from './params/quantity'
import { referenceHandler } from './params/reference'
import { stringHandler } from './params/string'
import { tokenHandler } from './params/token'
import { uriHandler } from './params/uri'
import type { SearchParamType } from './registry'

const HANDLERS: Partial<Record<SearchParamType, ParamHandler>> = {
  string: stringHandler,
  token: tokenHandler,
  reference: referenceHandler,
  uri: uriHandler,
  date: dateHandler,
  number: numberHandler,
  quantity: quantityHandler,
  composite: compositeHandler,
}

export function handlerFor(type: SearchParamType): ParamHandler | undefined {
  return HANDLERS[type]
}
