import { describe, expect, test } from 'bun:test'
import { emptyIndexRows } from './extract'
import { shapeOf as shapeOfRows } from './shape'

const shapeOf = (rows: any) => shapeOfRows('Observation', rows)

const rowsOf = (parts: Record<string, string[]>) => {
  const rows = emptyIndexRows() as unknown as Record<string, { code: string }[]>
  for (const [type, codes] of Object.entries(parts)) rows[type] = codes.map((code) => ({ code }))
  return rows as any
}

describe('shapeOf', () => {
  test('the same parameters give the same shape, whatever the number of rows of each', () => {
    const a = shapeOf(rowsOf({ token: ['status', 'category', 'category'], reference: ['subject'] }))
    expect(a).toBe(shapeOf(rowsOf({ token: ['status', 'category'], reference: ['subject', 'subject'] })))
  })

  test('a parameter more or less, or the same code in another type, is another shape', () => {
    const base = shapeOf(rowsOf({ token: ['status'], reference: ['subject'] }))
    expect(shapeOf(rowsOf({ token: ['status'], reference: ['subject', 'encounter'] }))).not.toBe(base)
    expect(shapeOf(rowsOf({ token: ['status'] }))).not.toBe(base)
    expect(shapeOf(rowsOf({ token: ['status'], string: ['subject'] }))).not.toBe(base)
    expect(shapeOf(rowsOf({}))).toMatch(/^-?\d+$/)
    expect(shapeOfRows('Condition', rowsOf({ token: ['status'], reference: ['subject'] }))).not.toBe(base)
  })
})
