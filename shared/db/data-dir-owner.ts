// One owner process per embedded data directory. The owner holds `{DATA_DIR}.lock` (beside the folder, like
// the `.key` file; mode 0600): its pid, the process's start time, and once listening its URL and a local
// admin token the CLI uses to reach it (bin/cli-target.ts -> api/admin/cli.ts). A second process
// refuses before it opens PGlite or binds a port. A lock whose pid is dead (or reused by another process,
// which the recorded start time tells) is stale and taken over.
import { closeSync, openSync, readFileSync, renameSync, unlinkSync, writeFileSync, writeSync } from 'node:fs'
import { hostname } from 'node:os'
import { resolve } from 'node:path'

export interface OwnerRecord {
  pid: number
  /** The process's start time (Linux: /proc/<pid>/stat field 22), to tell a reused pid. */
  procStart?: string
  host: string
  since: string
  /** Where the owner answers HTTP on this machine, once it listens (absent for a CLI that opened the folder itself). */
  url?: string
  /** Bearer token of the owner's /admin/cli, readable only by the user owning the file. */
  token?: string
}

export class DataDirInUse extends Error {
  constructor(
    readonly dataDir: string,
    readonly owner: OwnerRecord,
  ) {
    super(
      `data directory ${dataDir} is in use by process ${owner.pid}${owner.host !== hostname() ? ` on host ${owner.host}` : ''} (since ${owner.since}${owner.url ? `, serving ${owner.url}` : ''}).\n` +
        `Only one process may open an embedded data directory. Stop that process first (kill -TERM ${owner.pid}),\n` +
        `or start this one on another DATA_DIR, or set DATABASE_URL to use a PostgreSQL server.\n` +
        `The CLI (bun run keys, bun run orgs) works while the server runs: it sends its command to that process.\n` +
        `If no such process runs any more (a lock left by another machine or container), remove ${dataDir}.lock.`,
    )
  }
}

export const lockFileOf = (dataDir: string) => `${resolve(dataDir)}.lock`

/** Linux: a process's state and start time from /proc/<pid>/stat (fields 3 and 22); undefined elsewhere. */
function procStatOf(pid: number): { state: string; start: string } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields after the command (which may hold spaces and parentheses) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return { state: fields[0], start: fields[19] }
  } catch {
    return undefined
  }
}

function alive(owner: OwnerRecord): boolean {
  if (owner.pid === process.pid) return false
  if (owner.host !== hostname()) return true // another machine on a shared folder: assume it lives
  try {
    process.kill(owner.pid, 0)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false
  }
  const stat = procStatOf(owner.pid)
  if (stat?.state === 'Z' || stat?.state === 'X') return false // killed, not yet reaped by its parent
  return !(owner.procStart && stat && stat.start !== owner.procStart)
}

function readOwner(file: string): OwnerRecord | undefined {
  try {
    const owner = JSON.parse(readFileSync(file, 'utf8')) as OwnerRecord
    return Number.isInteger(owner?.pid) ? owner : undefined
  } catch {
    return undefined
  }
}

/** The live owner of a data directory, if any (a stale lock reads as none). */
export function liveOwnerOf(dataDir: string): OwnerRecord | undefined {
  const owner = readOwner(lockFileOf(dataDir))
  return owner && alive(owner) ? owner : undefined
}

export interface DataDirClaim {
  record: OwnerRecord
  /** Adds the owner's URL and its local admin token, once it listens. */
  publish(url: string, token: string): void
  release(): void
}

/** Claims the data directory for this process, or throws DataDirInUse naming the live owner. */
export function claimDataDir(dataDir: string): DataDirClaim {
  const file = lockFileOf(dataDir)
  const record: OwnerRecord = { pid: process.pid, procStart: procStatOf(process.pid)?.start, host: hostname(), since: new Date().toISOString() }
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600)
      writeSync(fd, JSON.stringify(record))
      closeSync(fd)
      break
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 3) throw err
    }
    const owner = readOwner(file)
    if (owner && alive(owner)) throw new DataDirInUse(resolve(dataDir), owner)
    // Stale (or half written by a process that died): move it aside atomically, then claim again.
    try {
      renameSync(file, `${file}.stale-${process.pid}`)
      unlinkSync(`${file}.stale-${process.pid}`)
    } catch {}
  }
  let released = false
  return {
    record,
    publish(url, token) {
      Object.assign(record, { url, token })
      const tmp = `${file}.${process.pid}.tmp`
      writeFileSync(tmp, JSON.stringify(record), { mode: 0o600 })
      renameSync(tmp, file)
    },
    release() {
      if (released) return
      released = true
      if (readOwner(file)?.pid === process.pid)
        try {
          unlinkSync(file)
        } catch {}
    },
  }
}
