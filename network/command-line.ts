import { packagedBuild } from './build-check.mjs'

let installed: boolean | undefined

/** Whether this copy of Parley is an installed package rather than a working copy (asked once). */
function isPackage(): boolean {
  installed ??= packagedBuild() !== undefined
  return installed
}

/**
 * How the person reading a message runs the network command `verb` (`up`, `down`, `resume`...), for the hints the
 * command and the controls print: `npm run network -- resume` in a working copy, `npx parley resume` where Parley is
 * installed as a package (docs/package.md). Arguments follow it.
 */
export function networkCommand(verb: string, asPackage = isPackage()): string {
  if (asPackage) return `npx parley ${verb}`
  return verb === 'up' || verb === 'down' ? `npm run network:${verb} --` : `npm run network -- ${verb}`
}
