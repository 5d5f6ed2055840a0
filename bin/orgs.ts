// Organizations of the patient API, their API keys and the FHIR source catalog, from the command line
// (shared/cli/orgs.ts has the commands); against a running embedded server, through that server (cli-target.ts).
import { runTool } from './cli-target'

await runTool('orgs', process.argv.slice(2))
