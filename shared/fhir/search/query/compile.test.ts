import { describe, expect, test } from 'bun:test'
import { needsCustomPlan } from './compile'
import { parseSearch } from './parse'

const criteria = (type: string, query: string) => parseSearch([type], new URLSearchParams(query), { defaultCount: 20, maxCount: 1000, lenient: false }).criteria

describe('needsCustomPlan', () => {
  test('a _has anywhere, also nested or inside a chain; not plain parameters or chains alone', () => {
    expect(needsCustomPlan(criteria('Patient', '_has:Observation:patient:code=8302-2'))).toBe(true)
    expect(needsCustomPlan(criteria('Patient', 'name=x&_has:Observation:patient:_has:Provenance:target:agent=Practitioner/1'))).toBe(true)
    expect(needsCustomPlan(criteria('Observation', 'subject:Patient._has:Group:member:code=x'))).toBe(true)
    expect(needsCustomPlan(criteria('Observation', 'subject.name=x&code=8302-2'))).toBe(false)
    expect(needsCustomPlan(criteria('Patient', 'name=x&gender=male'))).toBe(false)
    expect(needsCustomPlan([])).toBe(false)
  })
})
