import { describe, expect, test } from 'bun:test'
import { parseFhirJson } from './format/json'
import { withServerMeta } from './resource-meta'

describe('withServerMeta', () => {
  test('keys ordered resourceType, id, meta, then the rest as sent; meta codings sorted and merged', () => {
    const sent = parseFhirJson(
      '{"code":{"text":"a"},"resourceType":"Basic","id":"old","meta":{"tag":[{"code":"b"},{"code":"a"}],"profile":["p","p"]},"status":"x"}',
    )
    const stored = withServerMeta(sent, 'x', 2, new Date(0), { tag: [{ code: 'c' }] })
    expect(JSON.stringify(stored)).toBe(
      '{"resourceType":"Basic","id":"x","meta":{"versionId":"2","lastUpdated":"1970-01-01T00:00:00.000Z","tag":[{"code":"a"},{"code":"b"},{"code":"c"}],"profile":["p"]},"code":{"text":"a"},"status":"x"}',
    )
    expect(sent.id).toBe('old') // the resource sent is not changed
  })

  test('a lone tag is kept as it is; no meta gives versionId and lastUpdated only', () => {
    expect(withServerMeta({ resourceType: 'Basic', meta: { tag: [{ code: 'a' }] } }, 'x', 1, new Date(0)).meta.tag).toEqual([{ code: 'a' }])
    expect(withServerMeta({ resourceType: 'Basic' }, 'x', 1, new Date(0)).meta).toEqual({ versionId: '1', lastUpdated: '1970-01-01T00:00:00.000Z' })
  })

  test('a __proto__ property stays an own property, never the prototype', () => {
    const stored = withServerMeta(JSON.parse('{"resourceType":"Basic","__proto__":{"polluted":1}}'), 'x', 1, new Date(0))
    expect(Object.getPrototypeOf(stored)).toBe(Object.prototype)
    expect(stored.polluted).toBeUndefined()
    expect(JSON.stringify(stored)).toContain('"__proto__":{"polluted":1}')
  })
})
