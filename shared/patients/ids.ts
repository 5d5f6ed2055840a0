// Ids of the patient API's objects: a type prefix and 24 random base62 characters (e.g. `pf_0a9Ea55a...`).

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

export type IdPrefix = 'org' | 'key' | 'fhirsrc' | 'pf' | 'sess' | 'conn' | 'wh' | 'evt'

export function newId(prefix: IdPrefix): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24))
  let out = `${prefix}_`
  for (const b of bytes) out += ALPHABET[b % 62]
  return out
}

/** Prefixes a client's patient_id may not start with: they name our own objects. */
export const RESERVED_PATIENT_ID_PREFIXES = ['pat_', 'pf_', 'sess_', 'conn_', 'fhirsrc_', 'org_', 'key_', 'wh_', 'evt_'] as const
