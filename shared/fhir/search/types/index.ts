// The read-side handler of each search-parameter type.
import type { ParamHandler } from './param-type'
import { compositeHandler } from './composite'
import { dateHandler } from './date'
import { numberHandler } from './number'
import { quantityHandler } from './quantity'
import { referenceHandler } from './reference'
import { stringHandler } from './string'
import { tokenHandler } from './token'
import { uriHandler } from './uri'
import type { SearchParamType } from '../registry'

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
