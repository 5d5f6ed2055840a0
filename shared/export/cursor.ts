// Export cursors and snapshot ids: opaque base62 strings derived from what they name, so that the
// same export over the same data, and the same page of it, map to the same cache entries. A cursor is
// 12 characters (about 71 bits) and only ever resolves within the scope it was issued for.
// https://medblocks.com/docs/reference/changelog ("short, fixed-length opaque cursors that stay valid
// for 7 days from the response that issued them")
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

export const CURSOR_LENGTH = 12

/** How long a cursor (and the snapshot it points into) stays valid after it was issued. */
export const CURSOR_TTL_SECONDS = 7 * 24 * 3600

/** The id of a snapshot: its export (scope and filters) and its entries. */
export function snapshotId(scope: string, params: string, list: string): string {
  return digest(`${scope}\n${params}\n${list}`, 22)
}

/** The cursor of a position in a snapshot, for the page after it or before it. */
export function cursorOf(sid: string, pos: number, dir: 'after' | 'before'): string {
  return digest(`${sid}:${pos}:${dir}`, CURSOR_LENGTH)
}

/** True for a string that could be a cursor (checked before any lookup). */
export function isCursor(value: string): boolean {
  return /^[0-9A-Za-z]{12}$/.test(value)
}

/** `length` base62 characters of SHA-256 (bytes of 248 and above are skipped so that every letter is as likely). */
function digest(text: string, length: number): string {
  let out = ''
  for (let round = 0; out.length < length; round++) {
    for (const b of new Bun.CryptoHasher('sha256').update(`${round}\n${text}`).digest()) {
      if (b < 248 && out.length < length) out += ALPHABET[b % 62]
    }
  }
  return out
}
