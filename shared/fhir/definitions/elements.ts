// Element tables of every R4 type (resources, complex and primitive data types, backbone elements),
// built from the StructureDefinition snapshots. Validation, XML, patch and _summary all read these.
// https://hl7.org/fhir/R4/elementdefinition.html
import { loadDefinitionBundle } from './load'

const FHIR_TYPE_EXT = 'http://hl7.org/fhir/StructureDefinition/structuredefinition-fhir-type'
const REGEX_EXT = 'http://hl7.org/fhir/StructureDefinition/regex'

export type TypeKind = 'resource' | 'complex-type' | 'primitive-type' | 'backbone'

export interface ElementDef {
  /** Name as in JSON without the choice suffix: `deceased` for `deceased[x]`. */
  name: string
  /** Full path, e.g. `Patient.contact.name`. */
  path: string
  /** Type codes; for backbone elements the single code is the backbone type key (its path). */
  types: string[]
  choice: boolean
  min: number
  array: boolean
  /** Position among siblings, for writing XML in definition order. */
  order: number
  summary: boolean
  modifier: boolean
  /** Required binding value set (canonical, no version), if any. */
  requiredBinding?: string
  /** Target resource types of a Reference, empty when any. */
  targetTypes?: string[]
  /** XML representation hints (`xmlAttr`, `xhtml`). */
  representation?: string[]
}

export interface TypeDef {
  name: string
  kind: TypeKind
  abstract: boolean
  elements: Map<string, ElementDef>
  /** JSON property -> element and chosen type, with choice types expanded (`valueQuantity`). */
  properties: Map<string, { element: ElementDef; type: string }>
  /** Regex of the value of a primitive type, anchored. */
  regex?: RegExp
}

let types: Map<string, TypeDef> | undefined

/** The table of every type, by name (`Patient`, `HumanName`, `date`, `Patient.contact`). */
export function typeDefinitions(): Map<string, TypeDef> {
  if (!types) types = buildTypes()
  return types
}

export function getTypeDef(name: string): TypeDef | undefined {
  return typeDefinitions().get(name)
}

export function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1)
}

function typeCode(t: any): string {
  if (typeof t.code === 'string' && t.code.startsWith('http://hl7.org/fhirpath/System.')) {
    const ext = t.extension?.find((e: any) => e.url === FHIR_TYPE_EXT)
    return ext?.valueUrl ?? 'string'
  }
  return t.code
}

function buildTypes(): Map<string, TypeDef> {
  const out = new Map<string, TypeDef>()
  const sds = [...loadDefinitionBundle('profiles-types.json').entry, ...loadDefinitionBundle('profiles-resources.json').entry]
    .map((e) => e.resource)
    .filter((r) => r.resourceType === 'StructureDefinition' && r.fhirVersion === '4.0.1' && r.derivation !== 'constraint')

  for (const sd of sds) {
    const kind: TypeKind = sd.kind === 'resource' ? 'resource' : sd.kind
    const root: TypeDef = { name: sd.type, kind, abstract: !!sd.abstract, elements: new Map(), properties: new Map() }
    out.set(sd.type, root)
    const contentRefs: [ElementDef, string][] = []
    for (const el of sd.snapshot.element as any[]) {
      const path: string = el.path
      const dot = path.lastIndexOf('.')
      if (dot < 0) continue
      const parentPath = path.slice(0, dot)
      let raw = path.slice(dot + 1)
      const choice = raw.endsWith('[x]')
      if (choice) raw = raw.slice(0, -3)
      const parent = parentPath === sd.type ? root : out.get(parentPath)
      if (!parent) continue
      if (kind === 'primitive-type' && raw === 'value') {
        const regex = el.type?.[0]?.extension?.find((e: any) => e.url === REGEX_EXT)?.valueString
        if (regex) root.regex = new RegExp(`^(?:${regex})$`)
        continue
      }
      const codes: string[] = (el.type ?? []).map(typeCode)
      const isBackbone =
        !el.contentReference && (codes[0] === 'BackboneElement' || (codes[0] === 'Element' && parentPath !== 'Element' && sd.type !== 'Element'))
      const def: ElementDef = {
        name: raw,
        path,
        types: isBackbone ? [path] : codes,
        choice,
        min: el.min ?? 0,
        array: el.max === '*' || Number(el.max) > 1 || (el.base?.max && el.base.max !== '1' && el.base.max !== '0'),
        order: parent.elements.size,
        summary: !!el.isSummary,
        modifier: !!el.isModifier,
      }
      if (el.binding?.strength === 'required' && el.binding.valueSet) def.requiredBinding = String(el.binding.valueSet).split('|')[0]
      if (codes.includes('Reference')) {
        const targets = (el.type as any[])
          .flatMap((t) => t.targetProfile ?? [])
          .map((p: string) => p.slice(p.lastIndexOf('/') + 1))
          .filter((t: string) => t !== 'Resource')
        def.targetTypes = targets
      }
      if (el.representation) def.representation = el.representation
      if (el.contentReference) contentRefs.push([def, String(el.contentReference).slice(1)])
      parent.elements.set(raw, def)
      if (isBackbone) out.set(path, { name: path, kind: 'backbone', abstract: false, elements: new Map(), properties: new Map() })
    }
    for (const [def, target] of contentRefs) def.types = [target]
  }
  for (const t of out.values()) {
    for (const el of t.elements.values()) {
      if (el.choice) for (const code of el.types) t.properties.set(el.name + capitalize(code), { element: el, type: code })
      else t.properties.set(el.name, { element: el, type: el.types[0] })
    }
  }
  return out
}

/** True for the primitive data types (`string`, `date`, `code`...), whose JSON has a `_name` companion. */
export function isPrimitiveType(type: string): boolean {
  return typeDefinitions().get(type)?.kind === 'primitive-type'
}
