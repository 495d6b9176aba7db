import { waitFor } from '../process.js'
import { seesEveryMember } from '../readiness.js'
import type { MemberDescription, NetworkDescription } from '../description.js'
import { NetworkControls } from '../controls.js'
import type { RunningNetwork } from '../network.js'
import type { FirstFailure, Launcher } from './launcher.js'

/**
 * Start-up phase: ready only when every member has registered through the chain and sees every other member. One
 * member is polled at a time: they all come to see the whole network at about the same moment, and each poll lists
 * every identity (certificates included), which costs the member too; polled all at once every 100 ms, a 20-member
 * start spent seconds of CPU answering. A member checked after the first one has mostly caught up already.
 */
export async function waitUntilMembersMeet(members: MemberDescription[], timeout: number, failure: FirstFailure, log: (line: string) => void): Promise<void> {
  log('waiting for every member to see every org and node')
  const deadline = Date.now() + timeout
  for (const m of members) {
    await failure.step(waitFor(`${m.org} to list every org and node`, () => seesEveryMember(m.api, members), { timeoutMs: Math.max(1000, deadline - Date.now()), intervalMs: 100 }))
  }
}

/** The handle a started network is used through: its description, its test controls, and `stop` by PID. */
export function networkHandle(root: string, description: NetworkDescription, startupSeconds: number, timeout: number, launcher: Launcher): RunningNetwork {
  const controls = new NetworkControls(root, { description, readyTimeoutMs: timeout })
  return {
    dir: root,
    description,
    get processes() {
      return controls.processes()
    },
    startupSeconds,
    controls,
    stop: launcher.stopAll,
    pause: (name) => controls.pause(name),
    resume: (name) => controls.resume(name),
    kill: (name, signal) => controls.kill(name, signal),
    // From the newest build, as a restart under tsx ran the sources as they are now.
    restart: (name) => controls.restart(name),
    hold: (sel) => controls.hold(sel),
    release: (sel) => controls.release(sel),
    drop: (sel) => controls.drop(sel),
    holdReading: (member, source) => controls.holdReading(member, source),
    releaseReading: (member, source) => controls.releaseReading(member, source),
    controlsOf: (member) => controls.controlsOf(member),
    mining: (on) => controls.mining(on),
    mine: (blocks) => controls.mine(blocks),
    trace: (id, opts) => controls.trace(id, opts),
    verify: (opts) => controls.verify(opts),
    rogue: (who) => controls.rogue(who),
  }
}
