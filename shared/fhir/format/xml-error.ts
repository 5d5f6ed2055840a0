// The error for input that is not well-formed XML: AppError('invalid') with an OperationOutcome issue
// of code `structure`, carrying line and column when the checker knows them.
import { AppError } from '../../errors'

export function xmlError(message: string, line?: number, col?: number): AppError {
  // The library's messages may quote input (XMLValidator lists every unclosed tag): keep them short.
  if (message.length > 200) message = message.slice(0, 200) + '...'
  const at = line ? (col ? ` at line ${line}, column ${col}` : ` at line ${line}`) : ''
  const text = `XML error${at}: ${message}`
  return new AppError('invalid', text, { issues: [{ severity: 'error', code: 'structure', diagnostics: text }] })
}
