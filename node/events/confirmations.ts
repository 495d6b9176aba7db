import { ParleyError } from '../core/errors.js'
import type { MessageId } from '../core/ids.js'
import { type Message } from '../model/index.js'

/**
 * Callers of `?confirm=true` wait here for their message's local outcome; the aggregator settles them after
 * the confirming transaction is durable. A wake-up, never a poll.
 */
export class Confirmations {
  private readonly waiting = new Map<MessageId, { resolve: (m: Message) => void; reject: (e: Error) => void }[]>()

  wait(id: MessageId, timeoutMs: number): Promise<Message> {
    return new Promise<Message>((resolve, reject) => {
      const entry = {
        resolve: (m: Message) => {
          clearTimeout(timer)
          resolve(m)
        },
        reject: (e: Error) => {
          clearTimeout(timer)
          reject(e)
        },
      }
      const timer = setTimeout(() => {
        this.remove(id, entry)
        reject(new ParleyError('CONFIRM_TIMEOUT', `message ${id} was accepted but not confirmed within ${timeoutMs} ms; it is still in flight`))
      }, timeoutMs)
      const list = this.waiting.get(id) ?? []
      list.push(entry)
      this.waiting.set(id, list)
    })
  }

  confirmed(m: Message): void {
    const list = this.waiting.get(m.header.id)
    if (!list) return
    this.waiting.delete(m.header.id)
    for (const w of list) w.resolve(m)
  }

  rejected(m: Message, reason: string): void {
    const list = this.waiting.get(m.header.id)
    if (!list) return
    this.waiting.delete(m.header.id)
    for (const w of list) w.reject(new ParleyError('MESSAGE_REJECTED', `message ${m.header.id} was rejected: ${reason}`))
  }

  private remove(id: MessageId, entry: unknown): void {
    const list = this.waiting.get(id)
    if (!list) return
    const rest = list.filter((e) => e !== entry)
    if (rest.length === 0) this.waiting.delete(id)
    else this.waiting.set(id, rest)
  }
}
