// The hosted page's own token: its URL is `{public base}/connect/{flow id}/{token}`, and every step of
// the page (picker, Connect, Done) requires it, so knowing a flow id (in lists, return URLs, webhook
// payloads) is not enough to act on a flow. The token is a keyed digest of the flow id under the key
// that seals stored secrets (kept outside the database): nothing is stored, a database dump does not
// hold it, the flow's `url` reads the same on every GET, and a retired key still verifies the links it
// made (cipher.ts sign/verify).
import type { SecretCipher } from '../secrets/cipher'

const PURPOSE = 'hosted-page'

function pageToken(cipher: SecretCipher, flowId: string): string {
  return cipher.sign(PURPOSE, flowId)
}

export function isPageToken(cipher: SecretCipher, flowId: string, token: string): boolean {
  return cipher.verify(PURPOSE, flowId, token)
}

/** The flow `url` a patient opens; the steps are `{url}/authorize` and `{url}/done`. */
export function pageUrl(cipher: SecretCipher, publicBase: string, flowId: string): string {
  return `${publicBase}/connect/${encodeURIComponent(flowId)}/${pageToken(cipher, flowId)}`
}
