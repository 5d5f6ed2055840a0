// A value selected by a search parameter expression, with the FHIR type it has at that place in the
// resource: the types/*.ts extractors dispatch on it (a Coding and an Identifier are both objects).
import type { ElementDef } from '../../definitions/elements'

export interface TypedValue {
  /** FHIR type name: `HumanName`, `dateTime`, `code`, a backbone key (`Observation.component`) or a resource type. */
  type: string
  value: any
  /** The element the value was read from, when known (for the required binding of a `code`). */
  element?: ElementDef
}

/** Options every extractor receives; `code` is the search parameter being extracted. */
export interface ExtractContext {
  code: string
  /** This server's base URL (`https://host/fhir`): absolute references under it are local. */
  baseUrl?: string
}
