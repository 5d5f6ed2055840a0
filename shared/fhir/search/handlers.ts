// The read-side handler of each search-parameter type.
import type { ParamHandler } from './param-handler'
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
}

export function handlerFor(type: SearchParamType): ParamHandler | undefined {
  return HANDLERS[type]
}
