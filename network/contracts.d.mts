/** The hash of everything the contract artifacts are compiled from. */
export function contractsSourceHash(): string
/** Whether the artifacts were compiled from exactly that. */
export function contractsUpToDate(hash?: string): boolean
/** Compiles the contracts through Hardhat unless they are up to date; answers whether it compiled. */
export function ensureContracts(): boolean
