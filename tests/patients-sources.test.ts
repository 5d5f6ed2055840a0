// FHIR sources: the operator catalog (admin endpoints and the `orgs` CLI), GET /connections with q and
// type, GET /connections/{id} by fhirsrc_ id or raw base URL; SMART credentials never leave the server.
import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { sourceCredentials } from '../shared/patients/fhir-sources'
import { useTestServer, readJson } from './harness'
import { adminFetch, call, createOrg, createSource, expectError } from './patients-client'

const s = useTestServer()
const ROOT = join(import.meta.dir, '..')

describe('GET /connections', () => {
  test('q: case-insensitive substring of the name; type: exact', async () => {
    const org = await createOrg(s)
    const epic = await createSource(s, { name: 'Mercy Hospital (Epic)', type: 'epic-q' })
    const cerner = await createSource(s, { name: 'St. Mary 100%', type: 'cerner-q' })
    const names = async (qs: string) => (await readJson(await call(s, org, `/connections?${qs}`))).data.map((x: any) => x.id)
    expect(await names('q=mercy')).toEqual([epic.id])
    expect(await names('q=MARY')).toEqual([cerner.id])
    expect(await names('q=100%25')).toEqual([cerner.id])
    expect(await names('q=%25')).toEqual([cerner.id]) // % is literal, not a wildcard
    expect(await names('type=epic-q')).toEqual([epic.id])
    expect(await names('type=epic-q&q=mary')).toEqual([])
  })

  test('GET /connections/{id}: by fhirsrc_ id, by raw or encoded base URL; 404 otherwise; no credentials', async () => {
    const org = await createOrg(s)
    const src = await createSource(s, {
      name: 'Creds',
      client_id: 'cid-123',
      client_secret: 'very-secret',
      scopes: 'launch/patient patient/*.read',
      logo_url: 'https://cdn.example.com/l.png',
      portal_url: 'https://portal.example.com',
    })
    expect(Object.keys(src).sort()).toEqual(['fhir_base_url', 'id', 'logo_url', 'name', 'portal_url', 'resource_type', 'type'])
    for (const id of [src.id, src.fhir_base_url, encodeURIComponent(src.fhir_base_url), `${encodeURIComponent(src.fhir_base_url)}%2F`]) {
      const res = await call(s, org, `/connections/${id}`)
      expect(res.status).toBe(200)
      const got = await readJson(res)
      expect(got).toEqual(src)
    }
    const text =
      JSON.stringify(await readJson(await call(s, org, `/connections?q=creds`))) +
      JSON.stringify(await readJson(await adminFetch(s, `/admin/fhir-sources/${src.id}`)))
    expect(text).not.toContain('very-secret')
    expect(text).not.toContain('cid-123')
    expect(await sourceCredentials(s.sql, s.cipher, src.id)).toEqual({
      id: src.id,
      fhirBaseUrl: src.fhir_base_url,
      clientId: 'cid-123',
      clientSecret: 'very-secret',
      scopes: 'launch/patient patient/*.read',
    })
    await expectError(await call(s, org, '/connections/fhirsrc_nope'), 404, 'not_found_error', 'resource_not_found', 'id')
    await expectError(
      await call(s, org, `/connections/${encodeURIComponent('https://unknown.example.com/fhir')}`),
      404,
      'not_found_error',
      'resource_not_found',
    )
  })
})

describe('admin catalog', () => {
  test('create rules (name, URLs, unique base URL), update, delete', async () => {
    const bad = (json: unknown) => adminFetch(s, '/admin/fhir-sources', { method: 'POST', json })
    await expectError(await bad({ fhir_base_url: 'https://a.example.com' }), 400, 'invalid_request_error', 'bad_request', 'name')
    await expectError(await bad({ name: 'A' }), 400, 'invalid_request_error', 'bad_request', 'fhir_base_url')
    await expectError(await bad({ name: 'A', fhir_base_url: 'ftp://x' }), 400, 'invalid_request_error', 'invalid_data', 'fhir_base_url')
    await expectError(
      await bad({ name: 'A', fhir_base_url: 'https://a.example.com', logo_url: 'nope' }),
      400,
      'invalid_request_error',
      'invalid_data',
      'logo_url',
    )
    await expectError(await bad({ name: 'A', fhir_base_url: 'https://a.example.com', secret: 'x' }), 400, 'invalid_request_error', 'bad_request', 'secret')
    const src = await createSource(s)
    await expectError(await bad({ name: 'Again', fhir_base_url: `${src.fhir_base_url}/` }), 409, 'conflict_error', 'resource_conflict', 'fhir_base_url')
    const patched = await readJson(await adminFetch(s, `/admin/fhir-sources/${src.id}`, { method: 'PATCH', json: { name: 'Renamed', client_secret: 's2' } }))
    expect(patched).toMatchObject({ id: src.id, name: 'Renamed', fhir_base_url: src.fhir_base_url })
    expect((await sourceCredentials(s.sql, s.cipher, src.id)).clientSecret).toBe('s2')
    const del = await adminFetch(s, `/admin/fhir-sources/${src.id}`, { method: 'DELETE' })
    expect(await readJson(del)).toEqual({ id: src.id, resource_type: 'fhir_source', deleted: true })
    await expectError(await adminFetch(s, `/admin/fhir-sources/${src.id}`), 404, 'not_found_error', 'resource_not_found')
  })
})

async function orgsCli(...args: string[]): Promise<{ code: number; out: string }> {
  const proc = Bun.spawn(['bun', 'run', 'bin/orgs.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: s.config.databaseUrl as string, TOKEN_ENCRYPTION_KEY: s.config.tokenEncryptionKey, LOG_LEVEL: 'error' },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const out = (await new Response(proc.stdout).text()) + (await new Response(proc.stderr).text())
  return { code: await proc.exited, out }
}

describe('bun run orgs', () => {
  test('organizations, keys (shown once, usable, revocable) and sources from the command line', async () => {
    const created = await orgsCli('create', 'CLI Clinic')
    expect(created.code).toBe(0)
    const orgId = /(org_\w+)/.exec(created.out)?.[1] as string
    expect((await orgsCli('list')).out).toContain(orgId)
    const key = await orgsCli('key-create', orgId, 'cli', '--version', '2026-04-25')
    expect(key.code).toBe(0)
    const secret = /(pk_live_\S+)/.exec(key.out)?.[1] as string
    const keyId = /(key_\w+)/.exec(key.out)?.[1] as string
    const org = { id: orgId, key: secret, keyId }
    expect((await call(s, org, '/patients')).status).toBe(200)
    expect((await orgsCli('keys', orgId)).out).not.toContain(secret)
    const src = await orgsCli(
      'source-add',
      'CLI EHR',
      'https://cli-ehr.example.com/fhir/',
      '--type',
      'epic',
      '--client-id',
      'cli-cid',
      '--client-secret',
      'cli-secret',
    )
    expect(src.code).toBe(0)
    const srcId = /(fhirsrc_\w+)/.exec(src.out)?.[1] as string
    expect(await sourceCredentials(s.sql, s.cipher, srcId)).toMatchObject({
      fhirBaseUrl: 'https://cli-ehr.example.com/fhir',
      clientId: 'cli-cid',
      clientSecret: 'cli-secret',
    })
    expect((await orgsCli('source-update', srcId, '--scopes', 'patient/*.read')).code).toBe(0)
    expect((await sourceCredentials(s.sql, s.cipher, srcId)).scopes).toBe('patient/*.read')
    expect((await orgsCli('sources')).out).toContain(srcId)
    expect((await orgsCli('key-revoke', orgId, keyId)).code).toBe(0)
    const bad = await orgsCli('key-create', orgId, 'x', '--version', '1999-01-01')
    expect(bad.code).toBe(1)
    expect(bad.out).toContain('not supported')
    expect((await orgsCli('frobnicate')).code).toBe(2)
  }, 120_000) // ten CLI runs: 19-24 s of the suite's 30 under load
})
