// A FHIR response as a readable HTML page for a browser, as HAPI's ResponseHighlighterInterceptor (which
// the starter registers) serves one: the HTTP status, links to the raw JSON and XML, and the resource or
// Bundle pretty-printed. Everything taken from the request or the data is escaped, and the page runs no
// script (Content-Security-Policy), so stored content can never become markup.
// https://hl7.org/fhir/R4/http.html#mime-type
import { statusText } from '../../shared/fhir/bundle/results'
import type { Format } from './negotiate'

/** Headers of the page: no script, no framing by other sites, no sniffing into another type. */
export const HTML_HEADERS: Record<string, string> = {
  'content-type': 'text/html;charset=utf-8',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
}

const STYLE =
  'body{font-family:system-ui,Arial,sans-serif;margin:1.5em}' +
  'pre{background:#f6f8fa;border:1px solid #ddd;border-radius:6px;padding:1em;overflow:auto;font-size:0.9em}' +
  '.status{font-weight:bold;font-size:1.2em}h1{font-size:1.1em;color:#555}'

/**
 * The page for `body` (the response already serialised as `format`, pretty) answered with `status`;
 * `requestUrl` gives the links to the same response as raw JSON and XML.
 */
export function htmlPage(body: string | undefined, format: Format, status: number, requestUrl: string): string {
  const json = escapeHtml(withFormat(requestUrl, 'json'))
  const xml = escapeHtml(withFormat(requestUrl, 'xml'))
  return [
    '<!DOCTYPE html>',
    '<html lang="en"><head><meta charset="utf-8"><title>FHIR response</title>',
    `<style>${STYLE}</style></head><body>`,
    `<p>This result is rendered in HTML for easy viewing. You may access this content as <a href="${json}">Raw JSON</a> or <a href="${xml}">Raw XML</a>.</p>`,
    `<div class="status">HTTP ${escapeHtml(statusText(status))}</div>`,
    `<h1>Response Body (${format === 'xml' ? 'XML' : 'JSON'})</h1>`,
    `<pre>${escapeHtml(body ?? '')}</pre>`,
    '</body></html>',
  ].join('\n')
}

/** Text as HTML text or attribute value: the five characters that could end either. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] as string)
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/** The request URL with `_format` set (a relative link: the page never names another origin). */
function withFormat(requestUrl: string, format: Format): string {
  const url = new URL(requestUrl)
  url.searchParams.set('_format', format)
  return `${url.pathname}${url.search}`
}
