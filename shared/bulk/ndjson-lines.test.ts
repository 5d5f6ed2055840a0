import { describe, expect, test } from 'bun:test'
import { InputRejected, type NdjsonLine, ndjsonLines } from './ndjson-lines'

const enc = new TextEncoder()

/** A stream of `text`'s bytes cut into pieces of `size` bytes (lines and characters cut anywhere). */
function streamOf(bytes: Uint8Array, size: number): ReadableStream<Uint8Array> {
  let at = 0
  return new ReadableStream({
    pull(c) {
      if (at >= bytes.byteLength) return c.close()
      c.enqueue(bytes.slice(at, at + size))
      at += size
    },
  })
}

async function read(bytes: Uint8Array, size: number, limits: Partial<Parameters<typeof ndjsonLines>[1]> = {}): Promise<NdjsonLine[]> {
  const out: NdjsonLine[] = []
  for await (const l of ndjsonLines(streamOf(bytes, size), { maxLineBytes: 64, maxInputBytes: 1e9, offset: 0, linesBefore: 0, ...limits })) out.push(l)
  return out
}

describe('ndjsonLines', () => {
  const text = '\uFEFF{"a":"é"}\r\n\n  \n{"b":"日本"}\n{"c":1}'
  const bytes = enc.encode(text)

  test.each([1, 2, 3, 7, 1000])('the same lines and offsets whatever the chunk size (%i bytes)', async (size) => {
    const lines = await read(bytes, size)
    // Lines 2 and 3 are blank: one blank line for both, when both come in one chunk.
    const blanks = lines.filter((l) => l.text === undefined)
    expect(blanks.at(-1)).toMatchObject({ number: 3 })
    expect(lines.filter((l) => l.text !== undefined).map((l) => [l.number, l.text])).toEqual([
      [1, '{"a":"é"}'],
      [4, '{"b":"日本"}'],
      [5, '{"c":1}'],
    ])
    const first = enc.encode('\uFEFF{"a":"é"}\r\n').byteLength
    expect(lines.map((l) => l.end)).toEqual([first, ...blanks.map((b) => b.end), first + 4 + enc.encode('{"b":"日本"}\n').byteLength, bytes.byteLength])
    expect(blanks.at(-1)?.end).toBe(first + 4)
    expect(lines.every((l) => l.problem === undefined)).toBe(true)
  })

  test('a line longer than the limit is reported, unread, and the next one is read', async () => {
    const long = enc.encode(`{"x":"${'y'.repeat(200)}"}\n{"ok":true}\n`)
    for (const size of [5, 64, 1000]) {
      const lines = await read(long, size)
      expect(lines[0].problem).toContain('longer than the limit')
      expect(lines[1]).toEqual({ number: 2, end: long.byteLength, text: '{"ok":true}' })
    }
  })

  test('a line that is not UTF-8 is reported', async () => {
    const bad = new Uint8Array([0x7b, 0xff, 0xfe, 0x7d, 0x0a, 0x7b, 0x7d, 0x0a])
    const lines = await read(bad, 3)
    expect(lines[0].problem).toContain('UTF-8')
    expect(lines[1].text).toBe('{}')
  })

  test('numbering and offsets continue from where a resumed read starts', async () => {
    const lines = await read(enc.encode('{"d":4}\n'), 4, { offset: 100, linesBefore: 9 })
    expect(lines).toEqual([{ number: 10, end: 108, text: '{"d":4}' }])
  })

  test('a run of blank lines comes as one: the last one, with its number and end', async () => {
    const run = enc.encode(`{"a":1}\n${'\n'.repeat(100_000)}  \r\n{"b":2}\n\n\n`)
    const lines = await read(run, 65_536)
    expect(lines.map((l) => [l.number, l.text ?? null])).toEqual([
      [1, '{"a":1}'],
      [100_002, null],
      [100_003, '{"b":2}'],
      [100_005, null],
    ])
    expect(lines.at(-1)?.end).toBe(run.byteLength)
  })

  test('an input larger than the limit is rejected as a whole', async () => {
    const big = enc.encode('{}\n'.repeat(100))
    await expect(read(big, 10, { maxInputBytes: 150 })).rejects.toBeInstanceOf(InputRejected)
  })
})
