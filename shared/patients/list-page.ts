// Lists of the patient API: `{resource_type: "list", data, has_more, next_cursor}`, newest first
// (created_at desc, then insertion order), `limit` 1-100 default 10, `starting_after` taking the
// `next_cursor` of the previous page. Cursors are opaque: the position (created_at, seq) of the last
// item, bound by an HMAC to the list it came from (organization, list, filters), so a cursor from
// another list or another organization, or an edited one, is refused (400, param starting_after).
import { createHmac, timingSafeEqual } from 'node:crypto'
import { invalidData } from './api-error'

export interface ListPage<T> {
  resource_type: 'list'
  data: T[]
  has_more: boolean
  next_cursor: string | null
}

/** Where a page starts: strictly older than (createdAt, seq). */
export interface ListPosition {
  createdAt: Date
  seq: string
}

export interface ListQuery {
  limit: number
  after?: ListPosition
}

const SIG_BYTES = 9

/** A list's identity for its cursors: its name, organization and filters. */
export class ListCursor {
  constructor(
    private readonly secret: string,
    private readonly scope: string,
  ) {}

  static of(secret: string, organizationId: string, list: string, filters: Record<string, string | undefined>): ListCursor {
    const f = Object.keys(filters)
      .sort()
      .filter((k) => filters[k] !== undefined)
      .map((k) => `${k}=${filters[k]}`)
      .join('&')
    return new ListCursor(secret, `${organizationId}\n${list}\n${f}`)
  }

  encode(p: ListPosition): string {
    const body = Buffer.from(`${p.createdAt.getTime().toString(36)}.${BigInt(p.seq).toString(36)}`)
    return Buffer.concat([body, this.sign(body)]).toString('base64url')
  }

  decode(cursor: string): ListPosition {
    const raw = /^[A-Za-z0-9_-]{1,200}$/.test(cursor) ? Buffer.from(cursor, 'base64url') : Buffer.alloc(0)
    if (raw.length <= SIG_BYTES) throw invalidData('starting_after', `Invalid cursor '${cursor}': pass the next_cursor of a previous page`)
    const body = raw.subarray(0, raw.length - SIG_BYTES)
    if (!timingSafeEqual(raw.subarray(raw.length - SIG_BYTES), this.sign(body)))
      throw invalidData('starting_after', `Cursor '${cursor}' does not belong to this list (another list, filter or organization)`)
    const m = /^([0-9a-z]+)\.([0-9a-z]+)$/.exec(body.toString())
    if (!m) throw invalidData('starting_after', `Invalid cursor '${cursor}'`)
    return { createdAt: new Date(Number.parseInt(m[1], 36)), seq: parseBase36(m[2]).toString() }
  }

  /** The page from `limit + 1` rows fetched newest first. */
  page<R extends { created_at: Date; seq: string }, T>(rows: R[], limit: number, view: (r: R) => T): ListPage<T> {
    const has_more = rows.length > limit
    const shown = has_more ? rows.slice(0, limit) : rows
    const last = shown[shown.length - 1]
    return {
      resource_type: 'list',
      data: shown.map(view),
      has_more,
      next_cursor: has_more && last ? this.encode({ createdAt: last.created_at, seq: last.seq }) : null,
    }
  }

  private sign(body: Buffer): Buffer {
    return createHmac('sha256', this.secret).update(this.scope).update('\n').update(body).digest().subarray(0, SIG_BYTES)
  }
}

function parseBase36(s: string): bigint {
  let n = 0n
  for (const c of s) n = n * 36n + BigInt(Number.parseInt(c, 36))
  return n
}

/** `limit` and `starting_after` from a query string; limit 1-100, default 10. */
export function listQuery(query: URLSearchParams, cursor: ListCursor): ListQuery {
  const l = query.get('limit')
  let limit = 10
  if (l !== null) {
    if (!/^\d{1,3}$/.test(l) || Number(l) < 1 || Number(l) > 100) throw invalidData('limit', `limit must be an integer from 1 to 100, got '${l}'`)
    limit = Number(l)
  }
  const s = query.get('starting_after')
  return { limit, after: s === null || s === '' ? undefined : cursor.decode(s) }
}
