import { expect, test } from 'bun:test'
import { flattenCodeSystem } from './code-system'

const closure = (cs: any) => (flattenCodeSystem(cs)?.closure ?? []).map(([a, d, n]) => `${a}>${d}@${n}`).sort()

test('nested concepts, parent and child properties form one hierarchy with shortest depths', () => {
  const cs = {
    url: 'http://x',
    content: 'complete',
    concept: [
      { code: 'A', concept: [{ code: 'B', concept: [{ code: 'C' }] }] },
      {
        code: 'D',
        property: [
          { code: 'parent', valueCode: 'A' },
          { code: 'child', valueCode: 'C' },
        ],
      },
    ],
  }
  // C has two parents (B by nesting, D by D's child property); A reaches it at depth 2 either way
  expect(closure(cs)).toEqual(['A>A@0', 'A>B@1', 'A>C@2', 'A>D@1', 'B>B@0', 'B>C@1', 'C>C@0', 'D>C@1', 'D>D@0'])
})

test('a cycle, a self-parent and a parent outside the system do not loop or invent concepts', () => {
  const cs = {
    url: 'http://x',
    concept: [
      {
        code: 'A',
        property: [
          { code: 'parent', valueCode: 'B' },
          { code: 'parent', valueCode: 'A' },
          { code: 'parent', valueCode: 'ZZ' },
        ],
      },
      { code: 'B', property: [{ code: 'subsumedBy', valueCode: 'A' }] },
    ],
  }
  expect(closure(cs)).toEqual(['A>A@0', 'A>B@1', 'B>A@1', 'B>B@0'])
})

test('duplicate codes keep the first definition; supplements and url-less systems are not code systems', () => {
  const flat = flattenCodeSystem({ url: 'http://x', concept: [{ code: 'A', display: 'first' }, { code: 'A', display: 'second' }, { display: 'no code' }] })
  expect(flat?.concepts).toEqual([{ code: 'A', display: 'first', designation: null, property: null }])
  expect(flattenCodeSystem({ url: 'http://x', content: 'supplement', concept: [] })).toBeUndefined()
  expect(flattenCodeSystem({ concept: [{ code: 'A' }] })).toBeUndefined()
})
