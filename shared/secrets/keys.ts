// The keys that seal stored secrets come from outside the database: TOKEN_ENCRYPTION_KEY (required in
// the cluster form, DATABASE_URL set), or in the embedded form a key generated once into a file beside
// the data directory (`{DATA_DIR}.key`, mode 0600), never into the database. Earlier keys
// (TOKEN_ENCRYPTION_RETIRED_KEYS, and the embedded key file once TOKEN_ENCRYPTION_KEY replaces it) still
// open what they sealed until `bun run secrets rotate` has re-encrypted it.
import { createHash, randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { type Config, ConfigError } from '../config'
import { log } from '../log'

export interface SecretKey {
  /** 8 characters naming the key in what it sealed (a hash of it, not the key). */
  id: string
  key: Buffer
}

export interface KeySet {
  current: SecretKey
  retired: SecretKey[]
  /** Where the current key came from. */
  source: 'TOKEN_ENCRYPTION_KEY' | 'key file'
}

/** 64 hex characters or 32 bytes in base64 (standard or URL alphabet). */
export function parseKey(text: string): Buffer {
  const t = text.trim()
  const key = /^[0-9a-fA-F]{64}$/.test(t) ? Buffer.from(t, 'hex') : Buffer.from(t.replace(/-/g, '+').replace(/_/g, '/'), 'base64')
  if (key.length !== 32) throw new ConfigError('Invalid configuration: TOKEN_ENCRYPTION_KEY must be 32 bytes (64 hex characters or base64)')
  return key
}

export function secretKey(key: Buffer): SecretKey {
  return { id: createHash('sha256').update('fhir-platform key id\0').update(key).digest('base64url').slice(0, 8), key }
}

/** A fresh key, as 64 hex characters. */
export const newKeyText = () => randomBytes(32).toString('hex')

/** Where the embedded form keeps its key: beside (not inside) the data directory. */
export const keyFileOf = (dataDir: string) => `${resolve(dataDir)}.key`

/** The key rule, without touching files: the cluster form needs TOKEN_ENCRYPTION_KEY. Throws ConfigError. */
export function checkKeyConfig(config: Pick<Config, 'databaseUrl' | 'tokenEncryptionKey'>): void {
  if (config.databaseUrl && !config.tokenEncryptionKey)
    throw new ConfigError(
      'Invalid configuration: TOKEN_ENCRYPTION_KEY is required when DATABASE_URL is set (the key that encrypts stored tokens and secrets must not come from the database). Generate one with `bun run secrets new-key` and give the same value to every process.',
    )
}

/** The keys of this process; in the embedded form creates the key file on first start. */
export function loadKeys(config: Pick<Config, 'databaseUrl' | 'dataDir' | 'tokenEncryptionKey' | 'tokenEncryptionRetiredKeys'>): KeySet {
  checkKeyConfig(config)
  const retired = config.tokenEncryptionRetiredKeys.map((k) => secretKey(parseKey(k)))
  const file = config.databaseUrl ? undefined : keyFileOf(config.dataDir)
  if (config.tokenEncryptionKey) {
    const current = secretKey(parseKey(config.tokenEncryptionKey))
    // Moving an embedded install from its key file to TOKEN_ENCRYPTION_KEY: the file's key stays usable.
    if (file && existsSync(file)) retired.push(secretKey(readKeyFile(file)))
    return { current, retired: retired.filter((k) => k.id !== current.id), source: 'TOKEN_ENCRYPTION_KEY' }
  }
  return { current: secretKey(embeddedKey(file as string)), retired, source: 'key file' }
}

function embeddedKey(file: string): Buffer {
  if (!existsSync(file)) {
    // A fresh clone has no `.data` yet: the key file is written before the database creates its folder.
    mkdirSync(dirname(file), { recursive: true })
    try {
      // `wx`: two processes starting at once never overwrite each other's key.
      writeFileSync(file, `${newKeyText()}\n`, { mode: 0o600, flag: 'wx' })
      log.info('generated the key that encrypts stored secrets', { file })
    } catch (err) {
      if ((err as { code?: string }).code !== 'EEXIST') throw err
    }
  }
  return readKeyFile(file)
}

function readKeyFile(file: string): Buffer {
  const mode = statSync(file).mode & 0o777
  if (mode & 0o077) {
    chmodSync(file, 0o600)
    log.warn('the key file was readable by others; its mode is now 0600', { file, was: mode.toString(8) })
  }
  try {
    return parseKey(readFileSync(file, 'utf8'))
  } catch {
    throw new ConfigError(`Invalid key file ${file}: expected 64 hex characters (the key that encrypts stored secrets)`)
  }
}
