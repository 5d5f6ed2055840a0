// The connect flow in a real browser: headless Chromium (Debian's `chromium`) driven by playwright-core
// clicks Connect on the hosted picker, Approve on the test EHR's consent page, and Done, and lands on
// the organization's return_url with the patient and flow ids. The pages' Content-Security-Policy
// blocks nothing they use (no violation is reported).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { type Browser, chromium } from 'playwright-core'
import { useTestServer } from './harness'
import { call } from './patients-client'
import { LOCAL_EHR, startTestEhr, type TestEhr } from './support/test-ehr'
import { type ConnectSetup, createFlow, setupConnect, syncDone } from './support/test-ehr-flow'

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const s = useTestServer({ ...LOCAL_EHR, CONNECT_RESYNC_INTERVAL_MS: '0' })
let ehr: TestEhr
let setup: ConnectSetup
let browser: Browser
let app: ReturnType<typeof Bun.serve>

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM}: apt-get install -y chromium (or set CHROMIUM_PATH)`)
  ehr = await startTestEhr()
  ehr.decision = 'page'
  setup = await setupConnect(s, ehr)
  // The organization's own app, where Done returns the patient.
  app = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('<h1>Welcome back to Acme</h1>', { headers: { 'content-type': 'text/html' } }) })
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] })
})
afterAll(async () => {
  await browser?.close()
  app?.stop(true)
  await ehr?.stop()
})

test('picker -> consent at the EHR -> Done, in Chromium', async () => {
  const returnUrl = `http://127.0.0.1:${app.port}/connected`
  const flow = await createFlow(s, setup.org, {
    patient_id: 'browser-1',
    return_url: returnUrl,
    return_button_label: 'Acme',
    recommended_connection_ids: [setup.source.id],
  })
  const page = await browser.newPage({ viewport: { width: 390, height: 844 } }) // a phone
  const violations: string[] = []
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text())
  })
  await page.goto(flow.url)
  expect(await page.locator('form.search button').evaluate((b) => (globalThis as any).getComputedStyle(b).backgroundColor)).toBe('rgb(255, 255, 255)') // the style block applies
  expect(await page.title()).toBe('Connect your health records')
  await page.getByRole('button', { name: 'Connect' }).first().click()
  await page.waitForURL(`${ehr.origin}/authorize**`)
  await page.getByRole('button', { name: 'Approve' }).click()
  await page.waitForURL(`${flow.url}?result=connected`)
  expect(await page.getByRole('status').innerText()).toContain('Connected.')
  expect(await page.locator('li.connection').innerText()).toContain('Test EHR Health')
  await page.getByRole('button', { name: 'Acme', exact: true }).click()
  await page.waitForURL(`${returnUrl}**`)
  const back = new URL(page.url())
  expect(Object.fromEntries(back.searchParams)).toEqual({ patient_id: 'browser-1', patient_flow_id: flow.id })
  expect(await page.locator('h1').innerText()).toBe('Welcome back to Acme')
  expect(violations).toEqual([])
  await page.close()

  const got = (await (await call(s, setup.org, `/patient-flows/${flow.id}`)).json()) as any
  expect(got.status).toBe('complete')
  expect(got.connections[0].status).toBe('active')
  const done = await syncDone(s, setup.org, 'browser-1', got.connections[0].id)
  expect(done.sync.status).toBe('succeeded')
  expect(done.sync.total).toBeGreaterThan(50)
}, 60_000)
