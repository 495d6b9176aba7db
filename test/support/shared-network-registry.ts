import { join } from 'node:path'

/**
 * The file in the run's folder where each mocha process lists the folders of the shared networks it started
 * (shared-network.ts), one a line, for the run's teardown (run-hooks.ts). Apart from shared-network.ts, which loads
 * the network's whole start-up code: every mocha process loads run-hooks.ts, and most runs start no network.
 */
export const sharedNetworksRegistry = (runFolder: string): string => join(runFolder, 'shared-networks')
