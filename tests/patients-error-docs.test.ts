// The error documentation the envelope's doc_url points at (issue 24, item 2): served by the server
// under its public base URL, one anchor per code saying when it happens and what to do. The list of
// codes comes from the one table that defines them (shared/patients/error-codes.ts); a scan of the
// sources checks that no code is raised outside that table.
import { describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { ERROR_CODES, RETURN_ERROR_CODES } from '../shared/patients/error-codes'
import { useTestServer } from './harness'
import { call, createOrg, expectError } from './patients-client'

const s = useTestServer()
const ROOT = join(import.meta.dir, '..')

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) return sources(p)
    return p.endsWith('.ts') && !p.endsWith('.test.ts') ? [p] : []
  })
}

describe('GET /docs/errors', () => {
  test('an anchor per code with when it happens and what to do; public, HTML', async () => {
    const res = await fetch(`${s.base}/docs/errors`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toStartWith('text/html')
    const html = await res.text()
    const codes = [...Object.keys(ERROR_CODES), ...Object.keys(RETURN_ERROR_CODES)]
    expect(codes.length).toBeGreaterThan(20)
    for (const code of codes) {
      const at = html.indexOf(`<section id="${code}">`)
      expect({ code, found: at >= 0 }).toEqual({ code, found: true })
      const section = html.slice(at, html.indexOf('</section>', at))
      expect(section).toContain('When it happens')
      expect(section).toContain('What to do')
    }
  })

  test('every code raised in the sources is in the table the page comes from', () => {
    const raised = new Set<string>()
    for (const file of [...sources(join(ROOT, 'shared')), ...sources(join(ROOT, 'api')), ...sources(join(ROOT, 'workers'))]) {
      const text = readFileSync(file, 'utf8')
      for (const m of text.matchAll(/apiError\(\s*'[a-z-]+',\s*'([a-z_]+)'/g)) raised.add(m[1])
      for (const m of text.matchAll(/details: \{[^}]*\bcode: '([a-z_]+)'/g)) raised.add(m[1])
    }
    expect(raised.size).toBeGreaterThan(10)
    expect([...raised].filter((c) => !(c in ERROR_CODES))).toEqual([])
  })

  test("an error's doc_url is the code's anchor on the server's own page", async () => {
    const org = await createOrg(s)
    const e = await expectError(await call(s, org, '/patients/nobody'), 404, 'not_found_error', 'resource_not_found')
    expect(e.doc_url).toBe(`${s.base}/docs/errors#resource_not_found`)
    const page = await (await fetch(e.doc_url)).text()
    expect(page).toContain('<section id="resource_not_found">')
    const unauth = await expectError(await call(s, org, '/patients', { key: null }), 401, 'authentication_error', 'missing_api_key')
    expect(unauth.doc_url).toBe(`${s.base}/docs/errors#missing_api_key`)
  })
})
