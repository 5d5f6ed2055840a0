// Large response bodies (api/http/response.ts): a body over STREAM_ABOVE_BYTES goes as a direct stream
// (chunked, head and body in one send) instead of the head's 18 separate sends Bun makes for a large body
// completed after an await; small bodies keep their Content-Length. Checked over real HTTP/1.1 and
// HTTP/1.0 connections, on FHIR searches and on the Patient API.
import { beforeAll, describe, expect, test } from 'bun:test'
import { STREAM_ABOVE_BYTES } from '../api/http/response'
import { ADMIN_KEY, useTestServer } from './harness'
import { call, createOrg } from './patients-client'

const s = useTestServer()
const FAMILY = 'Largeresponse'
const PATIENTS = 12

beforeAll(async () => {
  // Each Patient carries about 2 KB of narrative: a page of them is well over the threshold.
  for (let i = 0; i < PATIENTS; i++) {
    const div = `<div xmlns="http://www.w3.org/1999/xhtml">${`Patient ${i} ärztliche Notiz. `.repeat(70)}</div>`
    const res = await s.fhirFetch('/Patient', {
      method: 'POST',
      json: { resourceType: 'Patient', text: { status: 'generated', div }, name: [{ family: FAMILY, given: [`G${i}`] }] },
    })
    expect(res.status).toBe(201)
  }
})

/** One request over a plain TCP connection; resolves with everything the server sent until it closed. */
function rawRequest(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    Bun.connect({
      hostname: '127.0.0.1',
      port,
      socket: {
        open(socket) {
          socket.write(request)
        },
        data(_socket, data) {
          chunks.push(Buffer.from(data))
        },
        close() {
          resolve(Buffer.concat(chunks).toString('utf8'))
        },
        error(_socket, err) {
          reject(err)
        },
      },
    }).catch(reject)
  })
}

describe('large response bodies', () => {
  test('a search Bundle over the threshold arrives chunked and whole; a small one keeps Content-Length', async () => {
    const res = await s.fhirFetch(`/Patient?family=${FAMILY}&_count=50`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/fhir+json;charset=utf-8')
    expect(res.headers.get('x-request-id')).toBeTruthy()
    const text = await res.text()
    expect(Buffer.byteLength(text)).toBeGreaterThan(STREAM_ABOVE_BYTES)
    expect(res.headers.get('transfer-encoding')).toBe('chunked')
    expect(res.headers.get('content-length')).toBeNull()
    const bundle = JSON.parse(text)
    expect(bundle.entry).toHaveLength(PATIENTS)
    expect(bundle.entry.every((e: any) => e.resource.text.div.includes('ärztliche Notiz'))).toBe(true)

    const small = await s.fhirFetch(`/Patient?family=${FAMILY}&_summary=count`)
    const body = await small.text()
    expect(small.headers.get('content-length')).toBe(String(Buffer.byteLength(body)))
    expect(JSON.parse(body).total).toBe(PATIENTS)
  })

  test('a body under the threshold in characters but over it in UTF-8 bytes is streamed too', async () => {
    // 3 bytes per character: about 5,000 characters are over 12 KB
    const res = await s.fhirFetch('/Patient', {
      method: 'POST',
      json: { resourceType: 'Patient', name: [{ family: `${'語'.repeat(5000)}` }] },
      headers: { prefer: 'return=representation' },
    })
    expect(res.status).toBe(201)
    const text = await res.text()
    expect(text.length).toBeLessThan(STREAM_ABOVE_BYTES)
    expect(Buffer.byteLength(text)).toBeGreaterThan(STREAM_ABOVE_BYTES)
    expect(res.headers.get('transfer-encoding')).toBe('chunked')
    expect(JSON.parse(text).name[0].family).toBe('語'.repeat(5000))
  })

  test('an HTTP/1.0 client gets the whole body, delimited by the close of the connection', async () => {
    const port = Number(new URL(s.base).port)
    const raw = await rawRequest(port, `GET /fhir/Patient?family=${FAMILY}&_count=50 HTTP/1.0\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${ADMIN_KEY}\r\n\r\n`)
    const split = raw.indexOf('\r\n\r\n')
    const head = raw.slice(0, split).toLowerCase()
    expect(head).toStartWith('http/1.1 200')
    expect(head).not.toContain('transfer-encoding: chunked')
    expect(JSON.parse(raw.slice(split + 4)).entry).toHaveLength(PATIENTS)
  })

  test('HEAD of a large search answers the headers and no body', async () => {
    const res = await s.fhirFetch(`/Patient?family=${FAMILY}&_count=50`, { method: 'HEAD' })
    expect(res.status).toBe(200)
    expect(await res.text()).toBe('')
  })

  test('a large XML rendering is streamed as well', async () => {
    const res = await s.fhirFetch(`/Patient?family=${FAMILY}&_count=50&_format=xml`)
    expect(res.status).toBe(200)
    expect(res.headers.get('transfer-encoding')).toBe('chunked')
    const xml = await res.text()
    expect(xml.match(/<entry>/g)?.length).toBe(PATIENTS)
  })

  test('a large Patient API reply is streamed and whole', async () => {
    const org = await createOrg(s)
    for (let i = 0; i < 60; i++) {
      const res = await call(s, org, '/patients', {
        method: 'POST',
        json: { patient_id: `large_${i}`, name: `Name ${i}`, metadata: { a: 'n'.repeat(400), b: 'm'.repeat(400) } },
      })
      expect(res.status).toBe(200)
    }
    const res = await call(s, org, '/patients?limit=60')
    expect(res.status).toBe(200)
    const text = await res.text()
    expect(Buffer.byteLength(text)).toBeGreaterThan(STREAM_ABOVE_BYTES)
    expect(res.headers.get('transfer-encoding')).toBe('chunked')
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8')
    expect(JSON.parse(text).data).toHaveLength(60)
  })
})
