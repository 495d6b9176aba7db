/**
 * Version 16: where in the chain's order an identity became registered.
 *
 * - `identities.registered_after`: the sequence of the last pin of the BatchPin event that carried its claim. A pin or
 *   message signed with its key counts as a member's only after it, and a group may name it only after it, on every
 *   member alike, whichever payload happened to arrive first here. Identities confirmed before this version have
 *   none, and count from the start.
 */
export const v16IdentityRegistration = {
  version: 16,
  name: 'identities: the chain sequence after which each is registered',
  up: `
    ALTER TABLE identities ADD COLUMN registered_after INTEGER;
  `,
}
