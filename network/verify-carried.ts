import type { MemberDescription } from './description.js'
import { messageData, type ApiData } from './inspect.js'
import { batchTypeOf } from '../node/model/index.js'
import type { MemberView } from './verify.js'

/**
 * The fields of a data item its hash does not cover, which a batch carries with it, as one text to compare. A
 * private message's blob reference is left out: this member's own item gets one when a later broadcast publishes it,
 * after the private batch carried it without.
 */
export function carriedOf(d: ApiData, broadcast: boolean): string {
  const dt = d.datatype ? ` datatype ${d.datatype.name}/${d.datatype.version}` : ''
  const blob = d.blob ? ` blob ${JSON.stringify(d.blob.name)} ${d.blob.size}${broadcast && d.blob.public ? ` ${d.blob.public}` : ''}` : ''
  return `validator ${d.validator}, created ${d.created}${dt}${blob}`
}

/** Requests in flight per member while reading what batches carried with settled messages' data. */
const CARRIED_READS = 8

/** Fills in what each settled message's data items carried, as the member holds them: one request per message. */
export async function readCarried(m: Pick<MemberDescription, 'org' | 'api'>, view: MemberView): Promise<void> {
  const settled = new Set(view.settled.map((s) => s.id))
  const todo = [...view.messages].filter(([key, msg]) => settled.has(key) && msg.data.length > 0)
  const worker = async (): Promise<void> => {
    for (let next = todo.pop(); next !== undefined; next = todo.pop()) {
      const [key, msg] = next
      const items = new Map((await messageData(m, msg.namespace, msg.id, msg.hash)).map((d) => [d.id, d]))
      const broadcast = batchTypeOf({ header: { type: msg.type } }) === 'broadcast'
      view.messages.set(key, { ...msg, data: msg.data.map((r) => {
        const d = items.get(r.id)
        return d ? { ...r, carried: carriedOf(d, broadcast) } : r
      }) })
    }
  }
  await Promise.all(Array.from({ length: CARRIED_READS }, worker))
}
