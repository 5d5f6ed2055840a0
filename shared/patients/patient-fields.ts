// Rules for the fields of a patient as clients send them (create, replace, and the flow upsert).
// ../shared/notes/patient-api.md §7.1: patient_id 1-200 characters, unique in the organization, no
// reserved prefix; email optional in email format; name at most 200 characters; metadata an object.
import { invalidData } from './api-error'
import { RESERVED_PATIENT_ID_PREFIXES } from './ids'

export type Metadata = Record<string, string | number | boolean | null>

export function checkPatientId(id: string, param = 'patient_id'): string {
  if (id.length < 1 || id.length > 200) throw invalidData(param, `${param} must be 1-200 characters`)
  const reserved = RESERVED_PATIENT_ID_PREFIXES.find((p) => id.startsWith(p))
  if (reserved) throw invalidData(param, `${param} may not start with the reserved prefix '${reserved}'`)
  return id
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/

export function checkEmail(email: string | null | undefined, param = 'email'): string | null {
  if (email === undefined || email === null) return null
  if (email.length > 320 || !EMAIL.test(email)) throw invalidData(param, `${param} must be an email address`)
  return email
}

export function checkName(name: string | null | undefined, param = 'name'): string | null {
  if (name === undefined || name === null) return null
  if (name.length > 200) throw invalidData(param, `${param} must be at most 200 characters`)
  return name
}

/** Stripe's metadata limits: at most 50 keys of up to 40 characters, string values up to 500. */
export function checkMetadata(metadata: unknown, param = 'metadata'): Metadata {
  if (metadata === undefined || metadata === null) return {}
  if (typeof metadata !== 'object' || Array.isArray(metadata)) throw invalidData(param, `${param} must be an object`)
  const entries = Object.entries(metadata)
  if (entries.length > 50) throw invalidData(param, `${param} may have at most 50 keys`)
  for (const [k, v] of entries) {
    if (k.length < 1 || k.length > 40) throw invalidData(`${param}.${k}`, `${param} keys must be 1-40 characters`)
    if (v !== null && typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean')
      throw invalidData(`${param}.${k}`, `${param} values must be strings, numbers, booleans or null`)
    if (typeof v === 'string' && v.length > 500) throw invalidData(`${param}.${k}`, `${param} values must be at most 500 characters`)
  }
  return metadata as Metadata
}
