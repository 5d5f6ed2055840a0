// Structured one-line JSON logs on stderr; the level comes from config.
type Level = 'debug' | 'info' | 'warn' | 'error'
const rank: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 }
let threshold = rank.info

export function setLogLevel(level: Level): void {
  threshold = rank[level]
}

function write(level: Level, msg: string, fields?: Record<string, unknown>): void {
  if (rank[level] < threshold) return
  process.stderr.write(`${JSON.stringify({ t: new Date().toISOString(), level, msg, ...fields })}\n`)
}

export const log = {
  debug: (msg: string, fields?: Record<string, unknown>) => write('debug', msg, fields),
  info: (msg: string, fields?: Record<string, unknown>) => write('info', msg, fields),
  warn: (msg: string, fields?: Record<string, unknown>) => write('warn', msg, fields),
  error: (msg: string, fields?: Record<string, unknown>) => write('error', msg, fields),
}
