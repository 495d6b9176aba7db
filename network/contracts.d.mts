/** The hash of everything the contract artifacts are compiled from. */
export function contractsSourceHash(): string
/** Whether the artifacts were compiled from exactly that. */
export function contractsUpToDate(hash?: string): boolean
/** Whether each contract the `.sol` files of `sources` declare has its artifact under `artifacts`. */
export function artifactsComplete(sources: string, artifacts: string): boolean
/** Compiles the contracts through Hardhat unless they are up to date; answers whether it compiled. */
export function ensureContracts(): boolean
