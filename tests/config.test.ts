// Configuration: a bad environment variable stops start-up with a message that names it.
import { describe, expect, test } from 'bun:test'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../shared/config'
import { createSql, withCustomPlans } from '../shared/db/client'
import { openRuntime } from '../shared/runtime'
import { TEST_ENCRYPTION_KEY } from './harness'

const ROOT = join(import.meta.dir, '..')

describe('loadConfig', () => {
  test('PORT=abc throws an error naming PORT', () => {
    expect(() => loadConfig({ PORT: 'abc' })).toThrow(/PORT/)
  })

  test('an out-of-range PORT throws an error naming PORT', () => {
    expect(() => loadConfig({ PORT: '70000' })).toThrow(/PORT/)
  })

  test('a bad DATABASE_URL throws an error naming DATABASE_URL', () => {
    expect(() => loadConfig({ DATABASE_URL: 'mysql://x' })).toThrow(/DATABASE_URL/)
  })

  test('a bad MAX_BODY_BYTES throws an error naming MAX_BODY_BYTES', () => {
    expect(() => loadConfig({ MAX_BODY_BYTES: 'lots' })).toThrow(/MAX_BODY_BYTES/)
  })

  test('valid values are parsed', () => {
    const c = loadConfig({ PORT: '9090', MAX_BODY_BYTES: '1000', AUTH_DISABLED: 'true' })
    expect(c.port).toBe(9090)
    expect(c.maxBodyBytes).toBe(1000)
    expect(c.authDisabled).toBe(true)
  })

  test('auth is on by default', () => {
    expect(loadConfig({}).authDisabled).toBe(false)
  })

  test('DB_PLAN_CACHE_MODE defaults to force_generic_plan, takes auto, and rejects anything else', () => {
    expect(loadConfig({}).dbPlanCacheMode).toBe('force_generic_plan')
    expect(loadConfig({ DB_PLAN_CACHE_MODE: 'auto' }).dbPlanCacheMode).toBe('auto')
    expect(() => loadConfig({ DB_PLAN_CACHE_MODE: 'sometimes' })).toThrow(/DB_PLAN_CACHE_MODE/)
  })

  test('the connection pool defaults to twice the cores plus two; DB_POOL_MAX overrides it', () => {
    expect(loadConfig({}).dbPoolMax).toBe(2 * availableParallelism() + 2)
    expect(loadConfig({ DB_POOL_MAX: '3' }).dbPoolMax).toBe(3)
  })

  test('JOB_LOCK_MS and JOB_STALLED_CHECK_MS are unset by default (each queue its own), parsed, and bounded below', () => {
    expect(loadConfig({}).jobTakeover).toEqual({ lockMs: undefined, stalledCheckMs: undefined })
    expect(loadConfig({ JOB_LOCK_MS: '4000', JOB_STALLED_CHECK_MS: '1000' }).jobTakeover).toEqual({ lockMs: 4000, stalledCheckMs: 1000 })
    expect(() => loadConfig({ JOB_LOCK_MS: '500' })).toThrow(/JOB_LOCK_MS/)
    expect(() => loadConfig({ JOB_STALLED_CHECK_MS: '0' })).toThrow(/JOB_STALLED_CHECK_MS/)
  })
})

describe('openRuntime on PostgreSQL', () => {
  test("the pool's connections use DB_PLAN_CACHE_MODE", async () => {
    const pg = new URL(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres')
    const db = `test_plan_${Date.now().toString(36)}`
    pg.pathname = `/${db}`
    const modes: string[] = []
    for (const mode of [undefined, 'auto']) {
      const rt = await openRuntime(
        loadConfig({ DATABASE_URL: pg.toString(), DB_PLAN_CACHE_MODE: mode, LOG_LEVEL: 'error', TOKEN_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY }),
      )
      try {
        const [row] = await rt.sql`show plan_cache_mode`
        modes.push(row.plan_cache_mode)
        if (mode === undefined) {
          // withCustomPlans: custom plans inside, the pool's mode again after (SET LOCAL ends with it)
          const inside = await withCustomPlans(rt.sql, async (tx) => (await tx`show plan_cache_mode`)[0].plan_cache_mode)
          expect(inside).toBe('force_custom_plan')
          const after = await Promise.all([1, 2, 3].map(async () => (await rt.sql`show plan_cache_mode`)[0].plan_cache_mode))
          expect(after).toEqual(['force_generic_plan', 'force_generic_plan', 'force_generic_plan'])
        }
      } finally {
        await rt.close()
      }
    }
    expect(modes).toEqual(['force_generic_plan', 'auto'])
    const admin = createSql(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', { max: 1 })
    await admin`drop database if exists ${admin(db)} with (force)`
    await admin.end()
  }, 60_000)
})

describe('api/main.ts with a bad config', () => {
  test('PORT=abc exits non-zero with a message naming PORT', async () => {
    const proc = Bun.spawn(['bun', 'run', 'api/main.ts'], {
      cwd: ROOT,
      env: { ...process.env, PORT: 'abc' },
      stdout: 'pipe',
      stderr: 'pipe',
    })
    // Should it start anyway, stop it rather than hang the suite.
    const guard = setTimeout(() => proc.kill(), 60_000) // loading api/main.ts alone took 5 s on the loaded machine
    const [code, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
    clearTimeout(guard)
    expect(code).not.toBe(0)
    expect(`${out}\n${err}`).toContain('PORT')
  }, 120_000)
})
