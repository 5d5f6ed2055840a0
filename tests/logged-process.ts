// Child processes whose output is kept, for tests that run the real programs (API nodes, workers, nginx)
// and wait on what they answer or log; a failure shows the end of the process's output.
import type { Subprocess } from 'bun'

export interface Proc {
  name: string
  proc: Subprocess<'ignore', 'pipe', 'pipe'>
  output: string[]
  /** Settles once both of its outputs have been read to their end (after it exits). */
  drained: Promise<void>
}

/** Starts `cmd` in `cwd` with `env` added to this process's; the new process joins `procs`. */
export function spawnLogged(procs: Proc[], cwd: string, name: string, cmd: string[], env: Record<string, string> = {}): Proc {
  const proc = Bun.spawn(cmd, { cwd, env: { ...process.env, ...env }, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const output: string[] = []
  const dec = new TextDecoder()
  const drain = async (s: ReadableStream<Uint8Array>) => {
    for await (const chunk of s) output.push(dec.decode(chunk))
  }
  const drained = Promise.all([drain(proc.stdout), drain(proc.stderr)]).then(
    () => {},
    () => {},
  )
  const p: Proc = { name, proc, output, drained }
  procs.push(p)
  return p
}

/** The last 40 lines of a process's output. */
export const tail = (p: Proc) => p.output.join('').split('\n').slice(-40).join('\n')

export function freePort(): number {
  const s = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = s.port
  s.stop(true)
  return port
}

export async function waitFor(p: Proc, what: string, ready: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const until = Date.now() + ms
  while (Date.now() < until) {
    if (p.proc.exitCode !== null) throw new Error(`${p.name} exited (${p.proc.exitCode}) before ${what}:\n${tail(p)}`)
    if (await ready().catch(() => false)) return
    await Bun.sleep(50)
  }
  throw new Error(`${p.name}: no ${what} within ${ms} ms:\n${tail(p)}`)
}

export const answers = (url: string) => async () => (await fetch(url)).ok
export const logged = (p: Proc, msg: string) => async () => p.output.join('').includes(`"msg":"${msg}"`)

export async function stop(p: Proc, signal: 'SIGTERM' | 'SIGKILL' | 'SIGQUIT' = 'SIGTERM', ms = 10_000): Promise<number | null> {
  if (p.proc.exitCode === null && p.proc.signalCode === null) {
    p.proc.kill(signal)
    const timer = setTimeout(() => p.proc.kill('SIGKILL'), ms)
    await p.proc.exited
    clearTimeout(timer)
  }
  return p.proc.exitCode
}
