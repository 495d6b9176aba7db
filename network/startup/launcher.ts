import { readPids, stopRecorded, updatePids } from '../description.js'
import type { SpawnedProcess } from '../process.js'
import type { Build } from '../build.js'
import { spawnNative, spawnProgram, type NativeProgram, type ProgramSpec } from '../specs.js'

/**
 * The processes a start launches, each recorded in the folder's PID file as it is spawned, so that a start that
 * fails half way (or is interrupted) can be stopped by PID: by this process with `stopAll`, or by another reading
 * the file.
 */
export class Launcher {
  private readonly started: SpawnedProcess[] = []

  constructor(private readonly pidsJson: string) {}

  launch(build: Build, spec: ProgramSpec): SpawnedProcess {
    return this.record(spawnProgram(build, spec))
  }

  /** Launches an executable of its own, that no build holds (PostgreSQL's server). */
  launchNative(spec: ProgramSpec & { program: NativeProgram }): SpawnedProcess {
    return this.record(spawnNative(spec))
  }

  private record(p: SpawnedProcess): SpawnedProcess {
    const i = this.started.findIndex((s) => s.name === p.name)
    if (i >= 0) this.started[i] = p
    else this.started.push(p)
    updatePids(this.pidsJson, () => ({ processes: this.started.map((x) => ({ name: x.name, pid: x.pid })) }))
    return p
  }

  /**
   * Stops every process, last launched first. What pids.json names is the record: a process restarted by
   * `network -- restart` (another process) is only there.
   */
  readonly stopAll = async (): Promise<void> => {
    const recorded = readPids(this.pidsJson).processes
    const all = [...recorded, ...this.started.filter((p) => !recorded.some((r) => r.pid === p.pid))]
    for (const p of all.reverse()) await stopRecorded(p)
    updatePids(this.pidsJson, (pids) => ({ ...pids, processes: [] }))
  }
}

/**
 * Readiness is awaited step by step, but the first process to fail ends the start at once, whatever the step:
 * `watch` a readiness that is awaited later, and await each step through `step`.
 */
export class FirstFailure {
  private failed: (err: unknown) => void = () => {}
  private readonly first = settled(new Promise<never>((_, reject) => (this.failed = reject)))

  watch(p: Promise<void>): Promise<void> {
    p.catch(this.failed)
    return settled(p)
  }

  step<T>(p: Promise<T>): Promise<T> {
    return Promise.race([p, this.first])
  }
}

/** The same promise, marked as handled so that it may reject before it is awaited; awaiting it still throws. */
function settled<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined)
  return p
}
