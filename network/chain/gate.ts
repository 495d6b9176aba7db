/**
 * A read/write gate over the in-memory chain. A write (mining a block, then journaling it) runs alone, so no
 * reader can see a block before it is on disk: a client that learned of block N from this chain will find
 * block N again after a crash. Waiting writers go before new readers, so a stream of reads cannot starve them.
 */
export class ReadWriteGate {
  private readers = 0
  private writing = false
  private waitingWriters: Array<() => void> = []
  private waitingReaders: Array<() => void> = []

  /** True while a write is running: notifications raised now describe a block that is not yet durable. */
  get isWriting(): boolean {
    return this.writing
  }

  async read<T>(fn: () => Promise<T>): Promise<T> {
    if (this.writing || this.waitingWriters.length > 0) {
      await new Promise<void>((res) => this.waitingReaders.push(res))
    } else {
      this.readers++
    }
    try {
      return await fn()
    } finally {
      this.readers--
      this.next()
    }
  }

  async write<T>(fn: () => Promise<T>): Promise<T> {
    if (this.writing || this.readers > 0 || this.waitingWriters.length > 0) {
      await new Promise<void>((res) => this.waitingWriters.push(res))
    } else {
      this.writing = true
    }
    try {
      return await fn()
    } finally {
      this.writing = false
      this.next()
    }
  }

  /** Hands the gate on: a waiting writer once no reader is left, otherwise every waiting reader at once. */
  private next(): void {
    if (this.writing) return
    if (this.waitingWriters.length > 0) {
      if (this.readers > 0) return
      this.writing = true
      this.waitingWriters.shift()?.()
      return
    }
    const readers = this.waitingReaders
    this.waitingReaders = []
    this.readers += readers.length
    for (const wake of readers) wake()
  }
}
