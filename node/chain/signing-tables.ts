import { secp256k1 } from '@noble/curves/secp256k1'

/**
 * The size of the table of multiples of secp256k1's generator that ethers' signer (noble-curves) keeps: windows of 4
 * bits instead of its default 8. The default table cost a member ~0.1 s of CPU at every start, to derive its one
 * address and sign the few transactions a member sends (one per batch); with 4-bit windows it costs ~20 ms, and
 * a signature ~0.7 ms more. The table belongs to the curve module, which ethers shares (one copy in the bundle):
 * called before the first key is used, it is the table every signature uses.
 */
export function useSmallSigningTables(): void {
  secp256k1.utils.precompute(4)
}
