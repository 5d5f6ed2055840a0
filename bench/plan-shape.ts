// The shapes of the plans a search's statements get, for bench/search-mix.ts's slowest queries.
import { planOf, planShape, searchStatements } from '../tests/plans'

export async function planShapes(url: string, path: string): Promise<string[]> {
  try {
    const { statements, custom } = await searchStatements(url, path, 3000)
    const out: string[] = []
    for (const st of statements) {
      const shape = planShape(await planOf(url, st, custom))
      out.push(`${custom ? 'custom' : 'generic'}: ${shape.length > 600 ? `${shape.slice(0, 600)}...` : shape}`)
    }
    return out
  } catch (e) {
    return [`(no plan: ${(e as Error).message.slice(0, 200)})`]
  }
}
