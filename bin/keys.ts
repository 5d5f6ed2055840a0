// API keys from the command line: `bun run keys create <label> [read,write,admin,export]`, `list`, `revoke <id>`
// (shared/cli/keys.ts); against a running embedded server, through that server (cli-target.ts).
import { runTool } from './cli-target'

await runTool('keys', process.argv.slice(2))
