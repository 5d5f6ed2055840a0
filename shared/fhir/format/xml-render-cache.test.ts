import { describe, expect, test } from 'bun:test'
import { XmlRenderCache } from './xml-render-cache'
import { toFhirXml } from './xml-write'

const patient = (family: string) =>
  JSON.stringify({ resourceType: 'Patient', id: family, name: [{ family }], extension: [{ url: 'http://x', valueDecimal: 1.5 }] })

describe('XmlRenderCache', () => {
  test('writes the XML of the JSON text, decimals as written, and answers a repeated text from memory', () => {
    const cache = new XmlRenderCache(1024 * 1024)
    const text = patient('A').replace('1.5', '1.50')
    const xml = cache.xmlOf(text)
    expect(xml).toBe(
      toFhirXml({ resourceType: 'Patient', id: 'A', name: [{ family: 'A' }], extension: [{ url: 'http://x', valueDecimal: JSON.rawJSON('1.50') }] }),
    )
    expect(xml).toContain('<valueDecimal value="1.50"/>')
    expect(cache.xmlOf(`${text}`)).toBe(xml)
    expect(cache.size).toBe(1)
    expect(cache.xmlOf(patient('B'))).toContain('<family value="B"/>') // another text, another entry
    expect(cache.size).toBe(2)
  })

  test('keeps within its budget, dropping the least recently used first', () => {
    const names = Array.from({ length: 21 }, (_, i) => `F${String(i).padStart(2, '0')}`)
    const one = 2 * (patient('F00').length + toFhirXml(JSON.parse(patient('F00'))).length)
    const cache = new XmlRenderCache(20 * one) // room for 20 entries of this size
    for (const f of names.slice(0, 20)) cache.xmlOf(patient(f))
    expect(cache.size).toBe(20)
    cache.xmlOf(patient('F00')) // F00 is now the most recently used, F01 the least
    cache.xmlOf(patient('F20'))
    expect(cache.size).toBe(20)
    expect(cache.has(patient('F00'))).toBe(true)
    expect(cache.has(patient('F01'))).toBe(false)
    expect(cache.has(patient('F20'))).toBe(true)
  })

  test('a budget of 0 keeps nothing, and bad JSON content still fails', () => {
    const cache = new XmlRenderCache(0)
    expect(cache.xmlOf(patient('A'))).toContain('<Patient')
    expect(cache.size).toBe(0)
    expect(() => cache.xmlOf('{"resourceType":"Patient","bogus":1}')).toThrow("Unknown property 'bogus'")
  })
})
