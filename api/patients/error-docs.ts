// The error documentation every `doc_url` points at: GET /docs/errors on the public base URL, one
// anchor per code (`#invalid_data`) saying when it happens and what to do, generated from the one
// table of codes (shared/patients/error-codes.ts), and the codes a direct-mode return_url carries.
// Public (no key): a link in a log must open in a browser.
import { ERROR_CODES, type ErrorCodeDoc, RETURN_ERROR_CODES } from '../../shared/patients/error-codes'

export function errorDocsHtml(): string {
  const byType = new Map<string, Array<[string, ErrorCodeDoc]>>()
  for (const [code, doc] of Object.entries(ERROR_CODES) as Array<[string, ErrorCodeDoc]>) {
    byType.set(doc.type, [...(byType.get(doc.type) ?? []), [code, doc]])
  }
  const entry = (code: string, head: string, doc: { when: string; action: string }) => `
    <section id="${code}">
      <h3><a href="#${code}"><code>${code}</code></a></h3>
      ${head}
      <dl><dt>When it happens</dt><dd>${inline(doc.when)}</dd><dt>What to do</dt><dd>${inline(doc.action)}</dd></dl>
    </section>`
  const envelopeCodes = [...byType]
    .map(
      ([type, codes]) =>
        `<h2 id="type-${type}"><code>${type}</code></h2>${codes.map(([code, doc]) => entry(code, `<p>HTTP ${doc.status}, <code>type: ${type}</code></p>`, doc)).join('')}`,
    )
    .join('')
  const returnCodes = Object.entries(RETURN_ERROR_CODES)
    .map(([code, doc]) => entry(code, '<p>In <code>return_url?…&amp;success=false&amp;error=' + code + '</code></p>', doc))
    .join('')
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Patient Connection API: errors</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:48rem;margin:0 auto;padding:1rem;color:#1a1a1a}section{border-top:1px solid #d5d9e0;padding:.25rem 0}dt{font-weight:600}code{background:#f1f3f6;padding:0 .2rem}</style>
</head><body><main>
<h1>Patient Connection API: errors</h1>
<p>Every non-2xx answer carries <code>{"error": {"type", "code", "message", "param", "doc_url", "request_id"}}</code>.
Branch on <code>code</code>; <code>param</code> names the offending field; log <code>code</code> and <code>request_id</code> for support.</p>
${envelopeCodes}
<h2 id="return-url-errors">Return URL errors (direct mode)</h2>
<p>When a flow created with <code>connection_id</code> ends without a connection, the patient is sent to
<code>return_url</code> with <code>success=false</code> and one of these <code>error</code> codes.</p>
${returnCodes}
</main></body></html>`
}

/** `backticks` become <code>; everything else is text. */
function inline(s: string): string {
  const escaped = s.replace(/[&<>]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : '&gt;'))
  return escaped.replace(/`([^`]+)`/g, '<code>$1</code>')
}
