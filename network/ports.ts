import { assertPortFree, freePort } from './process.js'

/**
 * Port plan of a network. With a base port P: chain P, IPFS API P+1, gateway P+2, member i API P+10+2i and
 * p2p P+11+2i, so a user sees stable, guessable URLs. Without one (tests), every port is picked free by the OS.
 */
export interface PortPlan {
  chain: number
  ipfsApi: number
  ipfsGateway: number
  member(index: number): Promise<{ api: number; p2p: number }>
}

export async function planPorts(basePort: number | undefined): Promise<PortPlan> {
  if (basePort !== undefined) {
    return {
      chain: basePort,
      ipfsApi: basePort + 1,
      ipfsGateway: basePort + 2,
      member: async (i) => ({ api: basePort + 10 + 2 * i, p2p: basePort + 11 + 2 * i }),
    }
  }
  const taken = new Set<number>()
  const pick = async (): Promise<number> => {
    for (;;) {
      const p = await freePort()
      if (!taken.has(p)) {
        taken.add(p)
        return p
      }
    }
  }
  return {
    chain: await pick(),
    ipfsApi: await pick(),
    ipfsGateway: await pick(),
    member: async () => ({ api: await pick(), p2p: await pick() }),
  }
}

/**
 * A base port whose whole plan for `members` members (chain, IPFS, each member's API and p2p) is free on 127.0.0.1
 * right now, for a network started by the command (whose default base is fixed) where a test or a measurement
 * wants free ports.
 */
export async function freeBasePort(members: number): Promise<number> {
  const offsets = [0, 1, 2, ...Array.from({ length: 2 * members }, (_, i) => 10 + i)]
  for (;;) {
    const base = await freePort(offsets.at(-1)!)
    if (base + offsets.at(-1)! > 65_535) continue
    try {
      for (const off of offsets) await assertPortFree(base + off, 'probe')
      return base
    } catch {
      // Taken: try another.
    }
  }
}
