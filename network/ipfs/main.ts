/**
 * The local IPFS as a process:
 *   node --import tsx network/ipfs/main.ts --dir D --api-port N --gateway-port M [--host 127.0.0.1]
 * or, started on its own from a config file (`npm run ipfs -- --config F`; network/hosts/service-config.ts):
 *   node --import tsx network/ipfs/main.ts --config F
 * (the network runs it compiled, as `node .build/<id>/ipfs.js ...`: see network/build.ts).
 * Prints `ipfs ready api=... gateway=...` once both servers listen; a busy port is one line naming it and exit 1;
 * SIGTERM/SIGINT close the servers and exit 0.
 */
import { parseArgs } from 'node:util'
import { PortBusyError } from '../process.js'
import { errorMessage } from './errors.js'
import { startIpfs, type IpfsServer } from './server.js'
import { loadIpfsConfig } from '../hosts/service-config.js'

function usage(problem: string): never {
  console.error(`ipfs: ${problem}`)
  console.error('usage: main.ts --dir DIR --api-port PORT --gateway-port PORT [--host HOST] | --config FILE')
  process.exit(2)
}

function port(name: string, value: string | undefined): number {
  if (value === undefined) usage(`--${name} is required`)
  const n = Number(value)
  if (!Number.isInteger(n) || n < 1 || n > 65535) usage(`--${name} must be a port number, got "${value}"`)
  return n
}

async function main(): Promise<void> {
  let values: { dir?: string; 'api-port'?: string; 'gateway-port'?: string; host?: string; config?: string }
  try {
    values = parseArgs({
      options: {
        dir: { type: 'string' },
        'api-port': { type: 'string' },
        'gateway-port': { type: 'string' },
        host: { type: 'string' },
        config: { type: 'string' },
      },
      strict: true,
    }).values
  } catch (err) {
    usage(errorMessage(err))
  }
  let opts: { dir: string; apiPort: number; gatewayPort: number; host: string | undefined }
  if (values.config !== undefined) {
    if (values.dir !== undefined || values['api-port'] !== undefined || values['gateway-port'] !== undefined || values.host !== undefined) {
      usage('--config names the folder, ports and host: give it alone')
    }
    try {
      opts = loadIpfsConfig(values.config)
    } catch (err) {
      usage(errorMessage(err))
    }
  } else {
    if (!values.dir) usage('--dir is required')
    opts = { dir: values.dir, apiPort: port('api-port', values['api-port']), gatewayPort: port('gateway-port', values['gateway-port']), host: values.host }
  }

  // A bug that escapes a handler must not take the network's storage down with it; say so loudly instead.
  process.on('unhandledRejection', (err) => console.error(`ipfs: unhandled rejection: ${errorMessage(err)}`))

  let server: IpfsServer
  try {
    server = await startIpfs(opts)
  } catch (err) {
    console.error(err instanceof PortBusyError ? err.message : `ipfs: cannot start: ${errorMessage(err)}`)
    process.exit(1)
  }
  console.log(`ipfs ready api=${server.api} gateway=${server.gateway}`)

  const stop = (): void => {
    server.close().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(`ipfs: error while stopping: ${errorMessage(err)}`)
        process.exit(0)
      },
    )
  }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
}

void main()
