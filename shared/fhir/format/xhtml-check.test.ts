import { describe, expect, test } from 'bun:test'
import { narrativeProblem, narrativeXhtml } from './xhtml-check'

const NS = 'xmlns="http://www.w3.org/1999/xhtml"'

describe('narrativeXhtml', () => {
  test('a div in the XHTML namespace is kept as written; surrounding whitespace is dropped', () => {
    const div = `<div ${NS} xml:lang="en" class='a'>a &amp; b &#169; <!-- c --><![CDATA[ <x> ]]><br/><p title="&quot;q&quot;">x</p></div>`
    expect(narrativeXhtml(div, 'p')).toBe(div)
    expect(narrativeXhtml(`\n  ${div}\n`, 'p')).toBe(div)
  })

  test('a div without a namespace gets the XHTML namespace declared (as HAPI FHIR)', () => {
    expect(narrativeXhtml('<div><p>x</p></div>', 'p')).toBe(`<div ${NS}><p>x</p></div>`)
    expect(narrativeXhtml('<div/>', 'p')).toBe(`<div ${NS}/>`)
  })

  test('prefixed XHTML is read by the full reader and written without prefixes', () => {
    expect(narrativeXhtml('<h:div xmlns:h="http://www.w3.org/1999/xhtml"><h:p>x</h:p></h:div>', 'p')).toBe(
      '<h:div xmlns:h="http://www.w3.org/1999/xhtml"><h:p>x</h:p></h:div>',
    )
  })

  test.each([
    ['not XML', 'plain text'],
    ['not a div', `<p ${NS}>x</p>`],
    ['another namespace', '<div xmlns="http://example.org">x</div>'],
    ['an unclosed element', `<div ${NS}><p>x</div>`],
    ['a mismatched end tag', `<div ${NS}><b>x</i></div>`],
    ['an HTML entity', `<div ${NS}>a&nbsp;b</div>`],
    ['a bare ampersand', `<div ${NS}>a & b</div>`],
    ['a duplicate attribute', `<div ${NS}><p class="a" class="b">x</p></div>`],
    ['< in an attribute', `<div ${NS}><p title="a<b">x</p></div>`],
    [']]> in text', `<div ${NS}>a ]]> b</div>`],
    ['-- in a comment', `<div ${NS}><!-- a -- b --></div>`],
    ['a control character', `<div ${NS}>a\u0001b</div>`],
    ['markup after the div', `<div ${NS}>x</div><script>alert(1)</script>`],
    ['text after the div', `<div ${NS}>x</div>y`],
    ['a DOCTYPE', `<!DOCTYPE div><div ${NS}>x</div>`],
    ['an undeclared prefix', `<div ${NS}><x:p>x</x:p></div>`],
  ])('refuses %s', (_label, div) => {
    expect(narrativeProblem(div)).toBeString()
    expect(() => narrativeXhtml(div, 'Patient.text.div')).toThrow()
  })

  test('a non-string is refused', () => {
    expect(narrativeProblem(42)).toBe('Narrative div must be a string')
  })
})
