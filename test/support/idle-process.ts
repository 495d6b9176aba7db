import { spawn } from 'node:child_process'
import { stopPid } from '../../network/process.js'

/**
 * Processes that do nothing (`sleep`), standing in for a network's processes where a test asks what is done to a
 * PID (pause, resume, kill, its state): each is stopped by PID in `stopAll`, which a test calls from its `after`.
 */
export class IdleProcesses {
  private readonly pids: number[] = []

  start(): number {
    const child = spawn('sleep', ['600'], { stdio: 'ignore' })
    if (child.pid === undefined) throw new Error('could not start sleep')
    this.pids.push(child.pid)
    return child.pid
  }

  /** A PID that was a process of this test's and has gone. */
  async gone(): Promise<number> {
    const pid = this.start()
    await stopPid(pid, 1000, 'SIGKILL')
    return pid
  }

  async stopAll(): Promise<void> {
    for (const pid of this.pids.splice(0)) await stopPid(pid, 1000, 'SIGKILL')
  }
}
