/**
 * The config files of the chain and IPFS when each is started on its own (`npm run chain -- --config F`,
 * `npm run ipfs -- --config F`), as a member node is from its own (node/config.ts). A folder named in a file is
 * relative to the file.
 *
 *   chain: { "host": "127.0.0.1", "port": 8545, "dir": "chain" }
 *   ipfs:  { "host": "127.0.0.1", "apiPort": 5001, "gatewayPort": 8080, "dir": "ipfs" }
 */
import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { dirname, isAbsolute, resolve } from 'node:path'

export interface ChainServiceConfig {
  /** The address the JSON-RPC server binds (default 127.0.0.1; 0.0.0.0 for every interface). */
  host: string
  port: number
  /** The chain's journal (absolute). */
  dir: string
}

export interface IpfsServiceConfig {
  /** The address both servers bind (default 127.0.0.1). */
  host: string
  apiPort: number
  gatewayPort: number
  /** The block store (absolute). */
  dir: string
}

export class ServiceConfigError extends Error {}

export function loadChainConfig(file: string): ChainServiceConfig {
  const { field, at } = reader(file)
  return { host: host(field('host', 'optional'), file), port: port(field('port'), 'port', file), dir: at(dirField(field('dir'), file)) }
}

export function loadIpfsConfig(file: string): IpfsServiceConfig {
  const { field, at } = reader(file)
  return {
    host: host(field('host', 'optional'), file),
    apiPort: port(field('apiPort'), 'apiPort', file),
    gatewayPort: port(field('gatewayPort'), 'gatewayPort', file),
    dir: at(dirField(field('dir'), file)),
  }
}

function reader(file: string): { field: (name: string, optional?: 'optional') => unknown; at: (p: string) => string } {
  let raw: unknown
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'))
  } catch (err) {
    throw new ServiceConfigError(`config ${file}: cannot read: ${(err as Error).message}`)
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new ServiceConfigError(`config ${file}: must be a JSON object`)
  const obj = raw as Record<string, unknown>
  const base = dirname(resolve(file))
  return {
    field: (name, optional) => {
      if (obj[name] === undefined && optional === undefined) throw new ServiceConfigError(`config ${file}: ${name} is required`)
      return obj[name]
    },
    at: (p) => (isAbsolute(p) ? p : resolve(base, p)),
  }
}

function host(v: unknown, file: string): string {
  if (v === undefined) return '127.0.0.1'
  if (typeof v !== 'string' || isIP(v) === 0) throw new ServiceConfigError(`config ${file}: host must be an IP address to bind, such as 127.0.0.1 or 0.0.0.0`)
  return v
}

function port(v: unknown, name: string, file: string): number {
  if (!Number.isInteger(v) || (v as number) < 1 || (v as number) > 65535) throw new ServiceConfigError(`config ${file}: ${name} must be a port number`)
  return v as number
}

function dirField(v: unknown, file: string): string {
  if (typeof v !== 'string' || v === '') throw new ServiceConfigError(`config ${file}: dir must be a non-empty path`)
  return v
}
