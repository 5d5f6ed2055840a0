// Logical ids. https://hl7.org/fhir/R4/datatypes.html#id
import { AppError, invalid } from '../errors'
import { isResourceType, resourceTypes } from './definitions/resource-types'

const ID = /^[A-Za-z0-9\-.]{1,64}$/
const NUMERIC = /^[0-9]+$/

export function isValidId(id: string): boolean {
  return ID.test(id)
}

/** An id the server takes from a client as a new resource's id: valid and not purely numeric (HAPI's ALPHANUMERIC strategy). */
export function isClientAssignable(id: string): boolean {
  return isValidId(id) && !NUMERIC.test(id)
}

/** 400 HAPI-0521 for an id that is not a FHIR id. */
export function assertValidId(id: string): void {
  if (!isValidId(id)) throw invalid(`HAPI-0521: Can not process entity with ID[${id}], this is not a valid FHIR ID`)
}

/** Client-assigned ids (update as create) must be valid and, as HAPI's ALPHANUMERIC strategy, not purely numeric. */
export function assertClientId(type: string, id: string): void {
  assertValidId(id)
  if (NUMERIC.test(id))
    throw invalid(
      `HAPI-0960: Can not create resource with ID[${id}], no resource with this ID exists and clients may only assign IDs which contain at least one non-numeric character`,
    )
}

/** 404 for a type this server does not know, as HAPI. */
export function assertResourceType(type: string): void {
  if (!isResourceType(type))
    throw new AppError('not-found', `HAPI-0302: Unknown resource type '${type}' - Server knows how to handle: [${resourceTypes().join(', ')}]`)
}
