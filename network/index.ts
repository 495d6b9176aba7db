/**
 * The package's entry (`import { startNetwork } from 'parley'`): a local network for another project's integration
 * suite, started and stopped from its own code, with the test controls of `parley <verb>` on the handle. The waits
 * a suite needs (a message confirmed, the network idle) are `parley/suite` (network/suite.ts). docs/package.md
 * shows both in use.
 */
export { startNetwork, stopNetwork, type RunningNetwork, type StartNetworkOptions } from './network.js'
export { ControlError, NetworkControls, type DeliverySelector, type MemberControls, type NetworkControlMethods, type ProcessInfo, type ReadingSource } from './controls.js'
export type { MemberDescription, NetworkDescription } from './description.js'
export type { NetworkTrace } from './trace.js'
export type { VerifyOptions, VerifyReport } from './verify.js'
export { RogueError, RogueMember, type RogueWho } from './rogue/member.js'
export type { RogueResult } from './rogue/results.js'
export type { DatabaseDescription, DatabaseEngine } from './startup/database.js'
