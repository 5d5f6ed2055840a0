// The hosted connect pages as server-rendered HTML: no build step, no JavaScript needed (forms and
// links only), one column that works on a phone, labelled controls and landmarks for screen readers.
import { createHash } from 'node:crypto'
import type { FlowConnectionItem, PickerSource } from '../../shared/connect/picker-sources'

export interface PickerPage {
  /** The page's own URL on the public base, with its token (shared/connect/page-token.ts); the forms post below it. */
  pageUrl: string
  search: string
  recommended: PickerSource[]
  others: PickerSource[]
  connections: FlowConnectionItem[]
  returnButtonLabel: string | null
  /** A short notice after coming back from a source (e.g. the patient declined). */
  notice?: string
}

const STYLE = `
*{box-sizing:border-box}body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1a1a1a;background:#f6f7f9}
main{max-width:40rem;margin:0 auto;padding:1rem}h1{font-size:1.5rem;margin:.5rem 0 1rem}h2{font-size:1.15rem;margin:1.5rem 0 .5rem}
ul{list-style:none;margin:0;padding:0}li.source,li.connection{display:flex;align-items:center;gap:.75rem;background:#fff;border:1px solid #d5d9e0;border-radius:.5rem;padding:.75rem;margin:.5rem 0}
li.source .name{flex:1;font-weight:600}li.source img{width:2rem;height:2rem;object-fit:contain}
button,input[type=search]{font:inherit;min-height:2.75rem;border-radius:.4rem}
button{padding:.5rem 1rem;border:1px solid #0b57d0;background:#0b57d0;color:#fff;cursor:pointer}button.secondary{background:#fff;color:#0b57d0}
input[type=search]{flex:1;padding:.5rem;border:1px solid #8a94a6;width:100%}form.search{display:flex;gap:.5rem}
:focus-visible{outline:3px solid #f4b400;outline-offset:2px}.status{margin-left:auto;font-size:.9rem}
.status.active{color:#146c2e}.status.failed,.status.refresh_failed{color:#b3261e}.notice{background:#fff4e5;border:1px solid #f4b400;padding:.75rem;border-radius:.5rem}
.done{margin:2rem 0}.done button{width:100%}.muted{color:#5f6673}.visually-hidden{position:absolute;left:-9999px}
`

/**
 * The Content-Security-Policy of every hosted page: nothing runs and nothing loads but the page's one
 * style block (by hash) and provider logos; no framing (clickjacking); no <base>. No form-action: the
 * forms post to the page itself, whose answers redirect to the source's sign-in and to the client's
 * return_url, of any origin, and browsers apply form-action to those redirects too.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`,
  'img-src https: data:',
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ')

export function pickerHtml(p: PickerPage): string {
  const action = p.pageUrl
  const sourceItem = (s: PickerSource) => `
      <li class="source">
        ${s.logo_url ? `<img src="${attr(s.logo_url)}" alt="">` : ''}
        <span class="name" id="src-${attr(s.id)}">${text(s.name)}</span>
        <form method="post" action="${action}/authorize">
          <input type="hidden" name="source_id" value="${attr(s.id)}">
          <button type="submit" aria-describedby="src-${attr(s.id)}">Connect</button>
        </form>
      </li>`
  const list = (items: PickerSource[]) => `<ul>${items.map(sourceItem).join('')}</ul>`
  const none = p.recommended.length === 0 && p.others.length === 0
  const body = `
  <h1>Connect your health records</h1>
  ${p.notice ? `<p class="notice" role="status">${text(p.notice)}</p>` : ''}
  <form class="search" method="get" action="${action}" role="search">
    <label for="q" class="visually-hidden">Search for your provider</label>
    <input type="search" id="q" name="q" value="${attr(p.search)}" placeholder="Search for your provider">
    <button type="submit" class="secondary">Search</button>
  </form>
  ${p.recommended.length ? `<section aria-labelledby="rec"><h2 id="rec">Recommended</h2>${list(p.recommended)}</section>` : ''}
  ${p.others.length ? `<section aria-labelledby="all"><h2 id="all">${p.search ? 'Search results' : 'All providers'}</h2>${list(p.others)}</section>` : ''}
  ${none ? `<p class="muted">No provider matches “${text(p.search)}”.</p>` : ''}
  <section aria-labelledby="mine"><h2 id="mine">Your connections</h2>
    ${
      p.connections.length
        ? `<ul>${p.connections.map((c) => `<li class="connection"><span>${text(c.source_name)}</span><span class="status ${attr(c.status)}">${text(statusText(c))}</span></li>`).join('')}</ul>`
        : '<p class="muted">None yet: pick a provider above and sign in there.</p>'
    }
  </section>
  <form class="done" method="post" action="${action}/done">
    <button type="submit">${text(p.returnButtonLabel ?? 'Done')}</button>
  </form>`
  return page('Connect your health records', body)
}

/**
 * The way back a page about a known flow offers: while the flow is open, the picker (not in direct
 * mode) and the return button (its Done form); once it is over, a link to return_url.
 */
export interface WayBack {
  /** The return button's text: return_button_label, else "Done". */
  label: string
  pickerUrl?: string
  doneAction?: string
  returnUrl?: string
}

/** A page with a heading and a sentence: expired or completed flows, errors; with the way back when the flow is known. */
export function messageHtml(title: string, message: string, back?: WayBack): string {
  const picker = back?.pickerUrl ? `<p><a href="${attr(back.pickerUrl)}">Pick another provider</a></p>` : ''
  const done = back?.doneAction
    ? `<form class="done" method="post" action="${attr(back.doneAction)}"><button type="submit">${text(back.label)}</button></form>`
    : back?.returnUrl
      ? `<p class="done"><a href="${attr(back.returnUrl)}">${text(back.label)}</a></p>`
      : ''
  return page(title, `<h1>${text(title)}</h1><p>${text(message)}</p>${picker}${done}`)
}

function statusText(c: FlowConnectionItem): string {
  if (c.status === 'active') return c.sync_status === 'succeeded' ? `Connected · ${c.sync_total ?? 0} records` : 'Connected · importing records'
  if (c.status === 'failed') return c.failure_code === 'user_denied' ? 'Not connected: you declined' : 'Not connected: sign-in failed'
  if (c.status === 'refresh_failed') return 'Needs reconnecting'
  return c.status
}

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<link rel="icon" href="data:,"><title>${text(title)}</title><style>${STYLE}</style></head>
<body><main>${body}</main></body></html>`
}

function text(s: string): string {
  return s.replace(/[&<>]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : '&gt;'))
}

function attr(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}
