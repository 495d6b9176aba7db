import type { Tx } from '../db/database.js'
import type { GroupsRepo } from '../db/repos/groups.js'
import { parseGroupinit } from '../identity/groupinit.js'
import { TAG_DEFINE_GROUP, type Data, type Message } from '../model/index.js'
import type { DefinitionHandler, DefinitionOutcome } from './types.js'

/**
 * A groupinit, in its turn on chain (its masked pin already checked): the group it carries must hash to the
 * message's `header.group` and hold its author; then it is stored here unless it is already (the sender stored it
 * when it sent), and the groupinit recorded as its announcement. FireFly's `ResolveInitGroup`.
 */
export function groupinitHandler(groups: GroupsRepo): DefinitionHandler {
  return {
    tag: TAG_DEFINE_GROUP,
    handle(tx: Tx, message: Message, data: Data[]): DefinitionOutcome {
      if (message.header.type !== 'groupinit') return { kind: 'reject', reason: `a ${message.header.type} message cannot define a group` }
      if (data.length !== 1) return { kind: 'reject', reason: `a groupinit carries one data item, not ${data.length}` }
      const parsed = parseGroupinit(data[0]!.value, message.header.group, message.header.namespace)
      if (!parsed.ok) return { kind: 'reject', reason: parsed.reason }
      const { group } = parsed
      if (!group.members.some((m) => m.identity === message.header.author)) return { kind: 'reject', reason: `its author ${message.header.author} is not a member of the group it defines` }
      groups.insert(tx, { ...group, message: message.header.id })
      groups.setMessage(tx, group.hash, message.header.id)
      return { kind: 'confirm', events: [] }
    },
  }
}
