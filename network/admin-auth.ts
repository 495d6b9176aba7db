import { readFileSync } from 'node:fs'
import { dirname, isAbsolute, resolve } from 'node:path'
import type { Layout } from './layout.js'
import type { NodeConfigFile } from '../node/config.js'
import { adminTokenPath, readToken } from '../node/admin/token.js'

/**
 * The header a member's test controls (`/admin/v1`) ask for: its admin token, read from the member's data folder in
 * the state folder (the member writes it there, mode 0600, when it first starts). Undefined when there is none yet
 * (a member that never started, or one whose config turns the controls off): the request then goes without it and
 * the member's own answer (404 or 401) says why.
 */
export function adminHeaders(L: Layout, org: string): Record<string, string> {
  const token = memberAdminToken(L, org)
  return token === undefined ? {} : { authorization: `Bearer ${token}` }
}

function memberAdminToken(L: Layout, org: string): string | undefined {
  const M = L.member(org)
  let dataDir = M.data
  try {
    // The config names the data folder, relative to itself; the layout's is the local network's default.
    const cfg = JSON.parse(readFileSync(M.config, 'utf8')) as Partial<NodeConfigFile>
    if (typeof cfg.dataDir === 'string') dataDir = isAbsolute(cfg.dataDir) ? cfg.dataDir : resolve(dirname(M.config), cfg.dataDir)
  } catch {
    // No readable config: the layout's folder.
  }
  return readToken(adminTokenPath(dataDir))
}
