// What a CLI command answers: its exit code and the lines for stdout and stderr. The same command runs in
// the CLI's own process (cluster form, or no server on the embedded folder) or inside the server that owns
// the embedded folder (api/admin/cli.ts), which sends this back to the CLI.
import { AppError } from '../errors'

export interface CliResult {
  code: number
  out: string[]
  err: string[]
}

export type CliTool = 'keys' | 'orgs'
export const CLI_TOOLS: readonly CliTool[] = ['keys', 'orgs']

export function cliResult(): CliResult {
  return { code: 0, out: [], err: [] }
}

/** A thrown error as the command's answer (exit code 1). */
export function cliFailure(res: CliResult, err: unknown): CliResult {
  res.err.push(err instanceof AppError ? `error: ${err.message}` : String((err as Error)?.message ?? err))
  res.code = 1
  return res
}

/** A usage error (exit code 2). */
export function cliUsage(res: CliResult, usage: string): CliResult {
  res.err.push(usage)
  res.code = 2
  return res
}
