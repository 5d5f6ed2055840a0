// A webhook receiver for the connect tests: records every delivery (raw body and signature header)
// and answers the status the test sets.
export interface Delivery {
  at: number
  body: string
  signature: string | null
  event: any
}

export interface Receiver {
  url: string
  deliveries: Delivery[]
  /** The status the next deliveries get. */
  status: number
  ofType(type: string): Delivery[]
  stop(): void
}

export function startReceiver(): Receiver {
  const r: Receiver = {
    url: '',
    deliveries: [],
    status: 200,
    ofType: (type) => r.deliveries.filter((d) => d.event.type === type),
    stop: () => server.stop(true),
  }
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const body = await req.text()
      r.deliveries.push({ at: Date.now(), body, signature: req.headers.get('medblocks-signature'), event: JSON.parse(body) })
      return new Response(r.status < 300 ? 'ok' : 'receiver failing', { status: r.status })
    },
  })
  r.url = `http://127.0.0.1:${server.port}/hooks`
  return r
}
