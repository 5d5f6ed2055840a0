// Run by tests/outbound-client.test.ts in a process whose NODE_EXTRA_CA_CERTS trusts the test's own
// certificate (issued for `ehr.test` only): GETs `https://<name>:<port>/` through the outbound client,
// with every name resolving to 127.0.0.1 (allow-listed), and prints the status or the error.
import { Outbound } from '../../shared/net/client'

const [name, port] = process.argv.slice(2)
const outbound = Outbound.fromConfig({ outboundAllow: '127.0.0.1', outboundTimeoutMs: 5000, outboundMaxResponseBytes: 1024 }, async () => ['127.0.0.1'])
try {
  const res = await outbound.fetch(`https://${name}:${port}/`)
  console.log(`status ${res.status} ${await res.text()}`)
} catch (err) {
  console.log(`error ${(err as Error).message}`)
}
