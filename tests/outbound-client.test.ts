// The outbound client (shared/net/client.ts) against real local servers: internal targets refused in
// every spelling unless allow-listed, nothing sent to them; the checked address pinned for the
// connection (the resolver is asked once per hop, the name travels in Host and as the TLS server name,
// and the certificate is verified for that name); redirects re-checked, credentials dropped across
// origins; deadline and response-size cap.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Outbound } from '../shared/net/client'
import { OutboundFailed, OutboundRefused, type Resolver } from '../shared/net/target'

interface Seen {
  path: string
  host: string | null
  authorization: string | null
  cookie: string | null
}

const seen: Seen[] = []
let server: ReturnType<typeof Bun.serve>
let port = 0

beforeAll(() => {
  server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const url = new URL(req.url)
      seen.push({ path: url.pathname, host: req.headers.get('host'), authorization: req.headers.get('authorization'), cookie: req.headers.get('cookie') })
      const to = url.searchParams.get('to')
      if (url.pathname === '/redirect' && to) return new Response(null, { status: 302, headers: { location: to } })
      if (url.pathname === '/big') return new Response('x'.repeat(64 * 1024))
      if (url.pathname === '/slow') {
        await Bun.sleep(2000)
        return new Response('late')
      }
      return new Response(`hello ${url.pathname}`)
    },
  })
  port = server.port as number
})
afterAll(() => server?.stop(true))

const settings = (allow = '') => ({ outboundAllow: allow, outboundTimeoutMs: 5000, outboundMaxResponseBytes: 16 * 1024 })

/** A resolver that answers from a table and counts its calls. */
function fakeResolver(table: Record<string, string[]>): Resolver & { calls: string[] } {
  const calls: string[] = []
  const r = (async (name: string) => {
    calls.push(name)
    const hit = table[name]
    if (!hit) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' })
    return hit
  }) as Resolver & { calls: string[] }
  r.calls = calls
  return r
}

describe('refused targets', () => {
  test.each(['127.0.0.1', '2130706433', '0x7f.1', '127.1', '0177.0.0.1', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '[::127.0.0.1]', '[0:0:0:0:0:ffff:7f00:1]'])(
    'http://%s:<port>/ is refused without the allow-list, and nothing reaches the server',
    async (host) => {
      const before = seen.length
      const err = await new Outbound({ ...policy(''), resolve: fakeResolver({}) }).fetch(`http://${host}:${port}/a`).catch((e) => e)
      expect(err).toBeInstanceOf(OutboundRefused)
      expect(err.message).toContain('loopback')
      expect(err.message).toContain('OUTBOUND_ALLOW')
      expect(seen.length).toBe(before)
    },
  )

  test('a name is checked on the address it resolves to: localhost through the system resolver', async () => {
    const err = await Outbound.fromConfig(settings(''))
      .fetch(`http://localhost:${port}/a`)
      .catch((e) => e)
    expect(err).toBeInstanceOf(OutboundRefused)
    expect(err.message).toMatch(/localhost \((127\.0\.0\.1|::1)\) is a loopback address/)
  })

  test.each([
    ['http://169.254.169.254/latest/meta-data/', 'metadata'],
    ['http://[fd00:ec2::254]/', 'metadata'],
    ['http://10.0.0.1/', 'private'],
    ['http://[fd12::1]/', 'unique-local'],
    ['http://0.0.0.0/', 'unspecified'],
    ['http://[::]/', 'unspecified'],
    ['http://224.0.0.1/', 'multicast'],
  ])('%s: %s', async (url, label) => {
    const err = await Outbound.fromConfig(settings(''))
      .fetch(url)
      .catch((e) => e)
    expect(err).toBeInstanceOf(OutboundRefused)
    expect(err.message).toContain(label)
  })

  test('metadata and unspecified addresses stay refused whatever the allow-list says', async () => {
    const wide = Outbound.fromConfig(settings('0.0.0.0/0,::/0,169.254.0.0/16'))
    for (const url of ['http://169.254.169.254/', 'http://0.0.0.0/', 'http://[fd00:ec2::254]/'])
      expect(await wide.fetch(url).catch((e) => e)).toBeInstanceOf(OutboundRefused)
  })

  test('other schemes and URLs with credentials are refused', async () => {
    const o = Outbound.fromConfig(settings('127.0.0.1'))
    expect((await o.fetch('file:///etc/passwd').catch((e) => e)).message).toContain('file:')
    expect((await o.fetch(`http://user:pw@127.0.0.1:${port}/`).catch((e) => e)).message).toContain('credentials')
  })

  test('a name with one public and one internal address is refused as a whole', async () => {
    const resolve = fakeResolver({ 'mixed.test': ['93.184.216.34', '10.1.2.3'] })
    const err = await new Outbound({ ...policy(''), resolve }).fetch('http://mixed.test/').catch((e) => e)
    expect(err).toBeInstanceOf(OutboundRefused)
    expect(err.message).toContain('mixed.test (10.1.2.3) is a private address')
  })
})

describe('allowed targets', () => {
  test('the allow-list lets the same call through', async () => {
    const res = await Outbound.fromConfig(settings('127.0.0.1')).fetch(`http://127.0.0.1:${port}/ok`)
    expect(res.status).toBe(200)
    expect(await res.text()).toBe('hello /ok')
  })

  test('the checked address is the one connected to: resolved once, the name sent as Host (no rebinding)', async () => {
    // The second answer would point elsewhere: a resolver asked again at connect time would be fooled.
    let answers = 0
    const rebinding: Resolver = async () => (answers++ === 0 ? ['127.0.0.1'] : ['10.9.9.9'])
    const res = await new Outbound({ ...policy('127.0.0.1'), resolve: rebinding }).fetch(`http://ehr.test:${port}/pinned`)
    expect(await res.text()).toBe('hello /pinned')
    expect(answers).toBe(1)
    expect(seen.at(-1)).toMatchObject({ path: '/pinned', host: `ehr.test:${port}` })
  })
})

describe('redirects', () => {
  const resolve = fakeResolver({ 'a.test': ['127.0.0.1'], 'b.test': ['127.0.0.1'] })
  const allowed = () => new Outbound({ ...policy('127.0.0.1'), resolve })

  test('not followed unless asked: the 3xx is the answer', async () => {
    const res = await allowed().fetch(`http://a.test:${port}/redirect?to=/ok`)
    expect(res.status).toBe(302)
  })

  test('followed when asked, each hop checked again: a redirect to a refused address is refused', async () => {
    const before = seen.length
    const err = await allowed()
      .fetch(`http://a.test:${port}/redirect?to=${encodeURIComponent('http://169.254.169.254/latest/meta-data/')}`, { followRedirects: 3 })
      .catch((e) => e)
    expect(err).toBeInstanceOf(OutboundRefused)
    expect(err.message).toContain('metadata')
    expect(seen.length).toBe(before + 1) // the first hop only
  })

  test('credentials go along on the same origin and are dropped for another origin', async () => {
    const headers = { authorization: 'Bearer secret-token', cookie: 'session=1', accept: 'application/json' }
    const same = await allowed().fetch(`http://a.test:${port}/redirect?to=/same`, { headers, followRedirects: 3 })
    expect(await same.text()).toBe('hello /same')
    expect(seen.at(-1)).toMatchObject({ path: '/same', authorization: 'Bearer secret-token', cookie: 'session=1' })
    const other = await allowed().fetch(`http://a.test:${port}/redirect?to=${encodeURIComponent(`http://b.test:${port}/other`)}`, {
      headers,
      followRedirects: 3,
    })
    expect(await other.text()).toBe('hello /other')
    expect(seen.at(-1)).toMatchObject({ path: '/other', host: `b.test:${port}`, authorization: null, cookie: null })
  })

  test('too many redirects end the call', async () => {
    const loop = `http://a.test:${port}/redirect?to=${encodeURIComponent(`http://a.test:${port}/redirect?to=/ok`)}`
    const err = await allowed()
      .fetch(loop, { followRedirects: 1 })
      .catch((e) => e)
    expect(err).toBeInstanceOf(OutboundFailed)
    expect(err.message).toContain('more than 1 redirects')
  })
})

describe('limits', () => {
  test('a body past the cap is refused; an excerpt reads only its first bytes', async () => {
    const o = Outbound.fromConfig(settings('127.0.0.1'))
    const err = await (await o.fetch(`http://127.0.0.1:${port}/big`)).text().catch((e) => e)
    expect(err).toBeInstanceOf(OutboundFailed)
    expect(err.message).toContain('16384 bytes')
    expect(await (await o.fetch(`http://127.0.0.1:${port}/big`)).excerpt(10)).toBe('x'.repeat(10))
  })

  test('a body read as a stream errors past the cap; read whole under it', async () => {
    const o = Outbound.fromConfig(settings('127.0.0.1'))
    const err = await new Response((await o.fetch(`http://127.0.0.1:${port}/big`)).stream()).text().catch((e) => e)
    expect(err).toBeInstanceOf(OutboundFailed)
    const whole = await new Response((await o.fetch(`http://127.0.0.1:${port}/big`, { maxResponseBytes: 64 * 1024 })).stream()).text()
    expect(whole.length).toBe(64 * 1024)
  })

  test("a caller's signal aborts the call besides its deadline", async () => {
    const abort = new AbortController()
    setTimeout(() => abort.abort(), 100)
    // /slow answers after 2 s, within the 5 s deadline: only the signal makes this call fail.
    const err = await Outbound.fromConfig(settings('127.0.0.1'))
      .fetch(`http://127.0.0.1:${port}/slow`, { signal: abort.signal })
      .catch((e) => e)
    expect(err).toBeInstanceOf(OutboundFailed)
  })

  test('a call past its deadline fails with the time it waited', async () => {
    const err = await Outbound.fromConfig(settings('127.0.0.1'))
      .fetch(`http://127.0.0.1:${port}/slow`, { timeoutMs: 200 })
      .catch((e) => e)
    expect(err).toBeInstanceOf(OutboundFailed)
    expect(err.message).toContain('within 200 ms')
  })
})

describe('TLS to a pinned address', () => {
  let dir = ''
  let tls: ReturnType<typeof Bun.serve>

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'outbound-tls-'))
    const made = Bun.spawnSync(
      ['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'key.pem', '-out', 'cert.pem', '-days', '1', '-subj', '/CN=ehr.test'].concat([
        '-addext',
        'subjectAltName=DNS:ehr.test',
      ]),
      { cwd: dir },
    )
    if (made.exitCode !== 0) throw new Error(`openssl failed: ${made.stderr.toString()}`)
    tls = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      tls: { cert: readFileSync(join(dir, 'cert.pem'), 'utf8'), key: readFileSync(join(dir, 'key.pem'), 'utf8') },
      fetch: (req) => new Response(`tls ${req.headers.get('host')}`),
    })
  })
  afterAll(() => {
    tls?.stop(true)
    rmSync(dir, { recursive: true, force: true })
  })

  const probe = async (name: string) => {
    const p = Bun.spawn(['bun', 'run', join(import.meta.dir, 'support', 'outbound-tls-probe.ts'), name, String(tls.port)], {
      env: { ...process.env, NODE_EXTRA_CA_CERTS: join(dir, 'cert.pem') },
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const out = await new Response(p.stdout).text()
    await p.exited
    return out.trim()
  }

  test('the certificate is verified for the URL name, not the address connected to', async () => {
    expect(await probe('ehr.test')).toBe(`status 200 tls ehr.test:${tls.port}`)
    const wrong = await probe('other.test') // resolves to the same address, but the certificate is not for it
    expect(wrong).toStartWith('error ')
    expect(wrong).toContain('ALTNAME')
  }, 20_000)
})

function policy(allow: string) {
  return { ...Outbound.fromConfig(settings(allow)).policy }
}
