// Recently written FHIR XML, keyed by the stored JSON text it was written from. Writing XML is a pure
// function of that text, so an entry is never stale: a new version, a $meta change or an expunge and
// re-create all give a different text. Least recently used entries go first; `maxBytes` 0 disables it.
import { parseFhirJson } from './json'
import { toFhirXml } from './xml-write'

export class XmlRenderCache {
  private readonly entries = new Map<string, string>()
  private bytes = 0

  constructor(private readonly maxBytes: number) {}

  get size(): number {
    return this.entries.size
  }

  has(json: string): boolean {
    return this.entries.has(json)
  }

  /** The compact FHIR XML of the resource whose FHIR JSON is `json`. */
  xmlOf(json: string): string {
    const hit = this.entries.get(json)
    if (hit !== undefined) {
      this.entries.delete(json) // to the most recently used end
      this.entries.set(json, hit)
      return hit
    }
    const xml = toFhirXml(parseFhirJson(json))
    // Both strings count, at two bytes a character (the worst case of the engine's string storage).
    const size = 2 * (json.length + xml.length)
    if (size > this.maxBytes / 16) return xml
    this.entries.set(json, xml)
    this.bytes += size
    for (const [key, value] of this.entries) {
      if (this.bytes <= this.maxBytes) break
      this.entries.delete(key)
      this.bytes -= 2 * (key.length + value.length)
    }
    return xml
  }
}
