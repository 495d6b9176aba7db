/**
 * One log line per problem, not one per retry: a line is written when a topic's reason changes, and a
 * recovery line when a topic that had a problem clears. Reasons must therefore be stable text (no attempt
 * counts or delays in them).
 */
export class ProblemLog {
  private readonly current = new Map<string, string>()

  constructor(private readonly log: (line: string) => void) {}

  /**
   * Logs `line` unless the topic already has this `reason`. The reason defaults to the line; a caller passes
   * a coarser one when details vary without news (a dropped connection, then a refused one, is one outage).
   */
  report(topic: string, line: string, reason = line): void {
    if (this.current.get(topic) === reason) return
    this.current.set(topic, reason)
    this.log(line)
  }

  /** Clears the topic; `recovered` is logged only if there was a problem to recover from. */
  clear(topic: string, recovered?: string): void {
    if (!this.current.delete(topic)) return
    if (recovered !== undefined) this.log(recovered)
  }

}
