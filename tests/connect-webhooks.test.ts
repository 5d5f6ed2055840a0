// Webhooks over HTTP: endpoint management (create with a one-time secret, list, get, update, delete,
// rotate), signed deliveries a receiver verifies, per-attempt records, the retry schedule, the endpoint
// disabled after the last failure, re-enabling, and redelivery with its rate limit.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { verifySignature } from '../shared/webhooks/signature'
import { useTestServer } from './harness'
import { call, createOrg, expectError, type Org } from './patients-client'
import { LOCAL_EHR } from './support/test-ehr'
import { createFlow, pressDone, waitFor } from './support/test-ehr-flow'
import { type Receiver, startReceiver } from './support/test-ehr-receiver'

// Three attempts: immediately, then 300 ms and 300 ms after each failure.
const s = useTestServer({ ...LOCAL_EHR, WEBHOOK_RETRY_DELAYS_MS: '0,300,300', CONNECT_RESYNC_INTERVAL_MS: '0' })
let org: Org
let other: Org
let hooks: Receiver

beforeAll(async () => {
  org = await createOrg(s, 'Hooks Inc')
  other = await createOrg(s, 'Other')
  hooks = startReceiver()
})
afterAll(() => hooks?.stop())

/** A flow completed through the hosted page's Done button: emits patient_flow.completed. */
async function completeAFlow(patientId: string): Promise<any> {
  const flow = await createFlow(s, org, { patient_id: patientId })
  const res = await pressDone(flow)
  expect(res.status).toBe(303)
  return flow
}

describe('endpoint management', () => {
  let wh: any

  test('create returns the secret once and pins the API version; bad input is a clear 400', async () => {
    const res = await call(s, org, '/webhooks', { method: 'POST', json: { url: hooks.url, events: ['patient_flow.completed'], description: 'main' } })
    expect(res.status).toBe(200)
    wh = (await res.json()) as any
    expect(wh).toMatchObject({
      resource_type: 'webhook_endpoint',
      url: hooks.url,
      events: ['patient_flow.completed'],
      status: 'active',
      api_version: '2026-04-25',
    })
    expect(wh.id).toStartWith('wh_')
    expect(wh.secret).toStartWith('whsec_')
    const got = (await (await call(s, org, `/webhooks/${wh.id}`)).json()) as any
    expect(got.secret).toBeUndefined()
    expect(got.id).toBe(wh.id)

    await expectError(await call(s, org, '/webhooks', { method: 'POST', json: { events: ['*'] } }), 400, 'invalid_request_error', 'bad_request', 'url')
    await expectError(
      await call(s, org, '/webhooks', { method: 'POST', json: { url: 'http://example.com/x', events: ['*'] } }),
      400,
      'invalid_request_error',
      'invalid_data',
      'url',
    )
    await expectError(
      await call(s, org, '/webhooks', { method: 'POST', json: { url: hooks.url, events: ['patient.nope'] } }),
      400,
      'invalid_request_error',
      'invalid_data',
      'events',
    )
    await expectError(
      await call(s, org, '/webhooks', { method: 'POST', json: { url: hooks.url, events: [] } }),
      400,
      'invalid_request_error',
      'invalid_data',
      'events',
    )
    await expectError(
      await call(s, org, '/webhooks', { method: 'POST', json: { url: hooks.url, events: ['*'], colour: 'red' } }),
      400,
      'invalid_request_error',
      'bad_request',
      'colour',
    )
    await expectError(
      await call(s, org, '/webhooks', { method: 'POST', json: { url: hooks.url, events: ['*'] }, key: null }),
      401,
      'authentication_error',
      'missing_api_key',
    )
  })

  test('list, update (api_version immutable), other organizations see nothing', async () => {
    const list = (await (await call(s, org, '/webhooks')).json()) as any
    expect(list).toMatchObject({ resource_type: 'list', has_more: false, next_cursor: null })
    expect(list.data.map((w: any) => w.id)).toEqual([wh.id])
    const patched = (await (
      await call(s, org, `/webhooks/${wh.id}`, { method: 'PATCH', json: { description: 'renamed', events: ['patient_flow.completed', 'records.sync.failed'] } })
    ).json()) as any
    expect(patched).toMatchObject({ description: 'renamed', events: ['patient_flow.completed', 'records.sync.failed'], api_version: '2026-04-25' })
    await expectError(
      await call(s, org, `/webhooks/${wh.id}`, { method: 'PATCH', json: { api_version: '2020-01-01' } }),
      400,
      'invalid_request_error',
      'bad_request',
      'api_version',
    )
    await expectError(await call(s, other, `/webhooks/${wh.id}`), 404, 'not_found_error', 'resource_not_found')
    expect(((await (await call(s, other, '/webhooks')).json()) as any).data).toEqual([])
  })

  test('a delivery is signed over t.body with the secret, and the receiver can verify it', async () => {
    const flow = await completeAFlow('hook-1')
    const d = await waitFor(async () => hooks.ofType('patient_flow.completed').find((x) => x.event.data.object.id === flow.id))
    expect(d.event).toMatchObject({ object: 'event', type: 'patient_flow.completed', api_version: '2026-04-25' })
    expect(d.event.id).toStartWith('evt_')
    expect(d.event.data.object).toMatchObject({ id: flow.id, resource_type: 'patient_flow', status: 'complete', patient_id: 'hook-1' })
    expect(d.signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/)
    expect(verifySignature(wh.secret, d.signature, d.body)).toBe(true)
    expect(verifySignature(wh.secret, d.signature, d.body.replace('hook-1', 'hook-2'))).toBe(false)
    expect(verifySignature('whsec_wrong', d.signature, d.body)).toBe(false)
    // The receiver has the body before the worker records the answer: wait for the event's record.
    const events = await waitFor(async () => {
      const list = (await (await call(s, org, `/webhooks/${wh.id}/events`)).json()) as any
      return list.data[0]?.last_status_code === 200 ? list : undefined
    })
    expect(events.data[0]).toMatchObject({ id: d.event.id, webhook_endpoint_id: wh.id, attempts: 1, last_status_code: 200, next_attempt_at: null })
    expect(events.data[0].delivered_at).toBeString()
  })

  test('rotate-secret: the new secret (shown once) signs the next deliveries, the old one no longer verifies', async () => {
    const rotated = (await (await call(s, org, `/webhooks/${wh.id}/rotate-secret`, { method: 'POST' })).json()) as any
    expect(rotated.secret).toStartWith('whsec_')
    expect(rotated.secret).not.toBe(wh.secret)
    const flow = await completeAFlow('hook-rotate')
    const d = await waitFor(async () => hooks.ofType('patient_flow.completed').find((x) => x.event.data.object.id === flow.id))
    expect(verifySignature(rotated.secret, d.signature, d.body)).toBe(true)
    expect(verifySignature(wh.secret, d.signature, d.body)).toBe(false)
    wh.secret = rotated.secret
  })

  test('only subscribed event types are sent', async () => {
    const only = (await (
      await call(s, org, '/webhooks', { method: 'POST', json: { url: `${hooks.url}?only=sync`, events: ['records.sync.completed'] } })
    ).json()) as any
    await completeAFlow('hook-filter')
    // The subscribed endpoint's delivery comes when the delivery job has run (not by a fixed time); then
    // 300 ms more for a delivery to the other endpoint, had the event been sent to it, to arrive too.
    const mine = () => hooks.deliveries.filter((d) => d.event.data.object.patient_id === 'hook-filter')
    await waitFor(async () => (mine().length > 0 ? true : undefined), 15_000, 'the subscribed endpoint’s delivery')
    await Bun.sleep(300)
    expect(mine()).toHaveLength(1)
    expect(mine()[0].event.type).toBe('patient_flow.completed')
    const none = (await (await call(s, org, `/webhooks/${only.id}/events`)).json()) as any
    expect(none.data).toEqual([])
    expect((await (await call(s, org, `/webhooks/${only.id}`, { method: 'DELETE' })).json()) as any).toEqual({
      id: only.id,
      resource_type: 'webhook_endpoint',
      deleted: true,
    })
    await expectError(await call(s, org, `/webhooks/${only.id}`), 404, 'not_found_error', 'resource_not_found')
  })

  test('failures are retried on the schedule, each attempt recorded; after the last the endpoint is disabled', async () => {
    hooks.status = 500
    const flow = await completeAFlow('hook-fail')
    const mine = () => hooks.ofType('patient_flow.completed').filter((x) => x.event.data.object.id === flow.id)
    await waitFor(async () => (mine().length >= 3 ? true : undefined), 10_000, 'three attempts')
    const [a, b, c] = mine()
    expect(new Set([a.event.id, b.event.id, c.event.id]).size).toBe(1)
    expect(b.at - a.at).toBeGreaterThanOrEqual(250)
    expect(c.at - b.at).toBeGreaterThanOrEqual(250)
    const ep = await waitFor(async () => {
      const w = (await (await call(s, org, `/webhooks/${wh.id}`)).json()) as any
      return w.status === 'disabled' ? w : undefined
    })
    expect(ep.status).toBe('disabled')
    const ev = ((await (await call(s, org, `/webhooks/${wh.id}/events`)).json()) as any).data[0]
    expect(ev).toMatchObject({
      id: a.event.id,
      attempts: 3,
      last_status_code: 500,
      delivered_at: null,
      next_attempt_at: null,
      last_response_body: 'receiver failing',
    })
    const rows = await s.sql<
      { attempt: number; status_code: number }[]
    >`select attempt, status_code from webhook_delivery where event_id = ${a.event.id} order by id`
    expect(rows.map((r) => [r.attempt, r.status_code])).toEqual([
      [1, 500],
      [2, 500],
      [3, 500],
    ])
    await Bun.sleep(700)
    expect(mine()).toHaveLength(3)
    // A disabled endpoint gets no new events until it is re-enabled.
    hooks.status = 200
    const later = await completeAFlow('hook-while-disabled')
    await Bun.sleep(300)
    expect(hooks.deliveries.some((d) => d.event.data.object.id === later.id)).toBe(false)
    const enabled = (await (await call(s, org, `/webhooks/${wh.id}`, { method: 'PATCH', json: { status: 'active' } })).json()) as any
    expect(enabled.status).toBe('active')
    const after = await completeAFlow('hook-reenabled')
    await waitFor(async () => hooks.deliveries.find((d) => d.event.data.object.id === after.id))
  })

  test('redeliver sends the event again now, at most once a minute per event (429)', async () => {
    const ev = ((await (await call(s, org, `/webhooks/${wh.id}/events`)).json()) as any).data.find((e: any) => e.data.object.patient_id === 'hook-fail')
    const before = hooks.deliveries.filter((d) => d.event.id === ev.id).length
    const res = await call(s, org, `/events/${ev.id}/redeliver`, { method: 'POST' })
    expect(res.status).toBe(200)
    expect(((await res.json()) as any).last_redelivered_at).toBeString()
    await waitFor(async () => (hooks.deliveries.filter((d) => d.event.id === ev.id).length > before ? true : undefined))
    const done = await waitFor(async () => {
      const e = ((await (await call(s, org, `/webhooks/${wh.id}/events`)).json()) as any).data.find((x: any) => x.id === ev.id)
      return e.delivered_at ? e : undefined
    })
    expect(done).toMatchObject({ attempts: 4, last_status_code: 200 })
    await expectError(await call(s, org, `/events/${ev.id}/redeliver`, { method: 'POST' }), 429, 'rate_limit_error', 'throttled')
    await expectError(await call(s, other, `/events/${ev.id}/redeliver`, { method: 'POST' }), 404, 'not_found_error', 'resource_not_found')
  })
})
