// When an API key (of the FHIR server or of an organization) is created or revoked, every node forgets the
// keys it verified, so a revocation holds at once rather than after the verifiers' few seconds of cache.
// In a process: the key caches registered here are cleared. Across processes (the cluster form, or the CLI
// writing to the database directly): a PostgreSQL NOTIFY on `key_changes`, which each API node LISTENs to
// (listenKeyChanges), whoever made the change (CLI, another node, SQL by hand that sends the NOTIFY).
import type { Sql } from '../db/client'
import { log } from '../log'

export const KEY_CHANGES_CHANNEL = 'key_changes'

const caches = new Set<WeakRef<Map<string, unknown>>>()

/** A verifier's cache, to be cleared on every key change (held weakly: a dropped verifier is forgotten). */
export function registerKeyCache(cache: Map<string, unknown>): void {
  caches.add(new WeakRef(cache))
}

export function forgetVerifiedKeys(): void {
  for (const ref of caches) {
    const cache = ref.deref()
    if (cache) cache.clear()
    else caches.delete(ref)
  }
}

/** After a key was created or revoked: clears this process's caches and tells the other processes. */
export async function keysChanged(sql: Sql): Promise<void> {
  forgetVerifiedKeys()
  await sql`select pg_notify(${KEY_CHANGES_CHANNEL}, '')`
}

/** An API node on PostgreSQL listens for key changes made elsewhere (one dedicated connection, reconnected). */
export async function listenKeyChanges(sql: Sql): Promise<void> {
  await sql.listen(KEY_CHANGES_CHANNEL, forgetVerifiedKeys, () => {
    // (Re)connected: changes missed while disconnected are forgotten too.
    forgetVerifiedKeys()
    log.debug('listening for key changes')
  })
}
