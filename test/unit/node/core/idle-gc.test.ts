import { expect } from 'chai'
import { PerformanceObserver, constants } from 'node:perf_hooks'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { collectWhenIdle, processDeps, type IdleGcDeps } from '../../../../node/core/idle-gc.js'

/** Deps whose periods a test runs by hand, each with the busy share it gives. */
function scripted(): { deps: IdleGcDeps; period: (share: number) => void; collections: () => number; trims: () => number; stopped: () => boolean } {
  let check: (() => void) | undefined
  let share = 0
  let collections = 0
  let trims = 0
  let stopped = false
  const deps: IdleGcDeps = {
    collect: () => collections++,
    trim: () => trims++,
    busyShare: () => share,
    every: (_ms, c) => {
      check = c
      return () => (stopped = true)
    },
  }
  return {
    deps,
    period: (s) => {
      share = s
      check!()
    },
    collections: () => collections,
    trims: () => trims,
    stopped: () => stopped,
  }
}

describe('collectWhenIdle', () => {
  it('collects once when the loop goes quiet after work, never while busy, and again only after more work and a longer rest', () => {
    const s = scripted()
    const idle = collectWhenIdle(s.deps)
    s.period(0.6)
    s.period(0.2)
    expect(s.collections()).to.equal(0)
    s.period(0.005)
    expect(s.collections()).to.equal(1)
    s.period(0.001)
    s.period(0.04) // between quiet and busy: neither new work nor rest
    s.period(0.001)
    s.period(0.001)
    expect(s.collections()).to.equal(1)
    s.period(0.1)
    // A rest of a few periods between bursts keeps the heap the next burst needs.
    for (let i = 0; i < 14; i++) s.period(0.002)
    s.period(0.03) // not quiet: the rest starts again
    for (let i = 0; i < 14; i++) s.period(0.002)
    expect(s.collections()).to.equal(1)
    s.period(0.002)
    expect(s.collections(), 'after 15 quiet periods in a row (30 s)').to.equal(2)
    idle.stop()
    expect(s.stopped()).to.equal(true)
  })

  it('collects at the first quiet period of a process, whose start was the work', () => {
    const s = scripted()
    collectWhenIdle(s.deps)
    s.period(0.002)
    expect(s.collections()).to.equal(1)
  })

  it('collects once more while the rest after the start goes on (V8 then shrinks the young generation), not after work', () => {
    const s = scripted()
    collectWhenIdle(s.deps)
    s.period(0.5)
    s.period(0.002)
    expect(s.collections()).to.equal(1)
    s.period(0.002)
    s.period(0.002)
    expect(s.collections()).to.equal(1)
    s.period(0.002)
    expect(s.collections(), 'after 3 more quiet periods (6 s)').to.equal(2)
    for (let i = 0; i < 20; i++) s.period(0.002)
    expect(s.collections(), 'nothing more while nothing happens').to.equal(2)

    const t = scripted()
    collectWhenIdle(t.deps)
    t.period(0.002)
    t.period(0.3) // work after the start's collection: a later rest must be long
    for (let i = 0; i < 14; i++) t.period(0.002)
    expect(t.collections()).to.equal(1)
    t.period(0.002)
    expect(t.collections()).to.equal(2)
  })

  it("gives malloc's free pages back at the first quiet period after a busy one and after each collection, not again while at rest", () => {
    const s = scripted()
    collectWhenIdle(s.deps)
    s.period(0.5)
    expect(s.trims(), 'never while working').to.equal(0)
    s.period(0.002)
    expect([s.collections(), s.trims()], "the start's collection, then a trim").to.deep.equal([1, 1])
    s.period(0.002)
    s.period(0.002)
    expect(s.trims(), 'nothing new to give back').to.equal(1)
    s.period(0.002)
    expect([s.collections(), s.trims()], 'the settling collection frees more').to.deep.equal([2, 2])
    // Light work (a share between quiet and busy) does not re-arm it: a member under a trickle would trim every 4 s.
    s.period(0.03)
    s.period(0.002)
    expect(s.trims()).to.equal(2)
    s.period(0.08)
    expect(s.trims()).to.equal(2)
    s.period(0.002)
    expect([s.collections(), s.trims()], 'a trim without a collection').to.deep.equal([2, 3])
    s.period(0.3)
    s.period(0.002)
    expect([s.collections(), s.trims()], 'after a burst, too').to.deep.equal([2, 4])
    for (let i = 0; i < 20; i++) s.period(0.002)
    expect([s.collections(), s.trims()], 'the long rest collects, and trims after it').to.deep.equal([3, 5])
  })

  it('works the same without a trim (a build that has none)', () => {
    const s = scripted()
    delete s.deps.trim
    collectWhenIdle(s.deps)
    s.period(0.5)
    s.period(0.002)
    expect(s.collections()).to.equal(1)
  })

  it('does nothing without an exposed gc', () => {
    expect(collectWhenIdle(undefined).stop()).to.equal(undefined)
  })

  it("the process's collection is a full one (mark-compact), not a scavenge", async () => {
    const own = (globalThis as { gc?: unknown }).gc
    setFlagsFromString('--expose-gc')
    ;(globalThis as { gc?: unknown }).gc = runInNewContext('gc') as () => void
    const kinds: number[] = []
    const observer = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) kinds.push((e as unknown as { detail: { kind: number } }).detail.kind)
    })
    observer.observe({ entryTypes: ['gc'] })
    try {
      const trim = (): void => {}
      expect(processDeps(trim)!.trim).to.equal(trim)
      expect(processDeps()!).to.not.have.property('trim')
      processDeps()!.collect()
      await new Promise((resolve) => setTimeout(resolve, 20))
      expect(kinds).to.include(constants.NODE_PERFORMANCE_GC_MAJOR)
    } finally {
      observer.disconnect()
      ;(globalThis as { gc?: unknown }).gc = own
    }
  })
})
