// One HTTP/1.1 request over a plain socket, byte for byte: for paths a fetch() client would normalise
// (`/patients/..`) and headers it would refuse to send. Answers the status, headers and body text.
import { connect } from 'node:net'

export interface RawAnswer {
  status: number
  headers: Record<string, string>
  body: string
}

export function rawRequest(base: string, head: string): Promise<RawAnswer> {
  const u = new URL(base)
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    const socket = connect(Number(u.port), u.hostname, () => socket.write(`${head}\r\nhost: ${u.host}\r\nconnection: close\r\n\r\n`))
    socket.on('data', (c) => chunks.push(Buffer.from(c)))
    socket.on('error', reject)
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8')
      const [top, ...rest] = text.split('\r\n\r\n')
      const [statusLine, ...lines] = top.split('\r\n')
      const headers: Record<string, string> = {}
      for (const l of lines) {
        const i = l.indexOf(':')
        headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim()
      }
      let body = rest.join('\r\n\r\n')
      if (headers['transfer-encoding'] === 'chunked') body = unchunk(body)
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body })
    })
  })
}

function unchunk(s: string): string {
  let out = ''
  let i = 0
  for (;;) {
    const j = s.indexOf('\r\n', i)
    if (j < 0) return out
    const n = Number.parseInt(s.slice(i, j), 16)
    if (!n) return out
    out += s.slice(j + 2, j + 2 + n)
    i = j + 2 + n + 2
  }
}
