import { processMemory } from '../../network/process.js'
import { nsBase } from '../../test/support/api.js'
import { downloadBlob, patternBytes, uploadBlob } from '../../test/support/upload.js'
import { get, postJson, sleep } from './http.js'
import { round } from './stats.js'
import { throwIfAborted, type BenchContext, type Json, type Scenario } from './types.js'

const MiB = 1024 * 1024
const NAMESPACE = 'default'

/** Samples the resident memory of some processes until stopped; answers each one's baseline and peak. */
function sampleRss(processes: { name: string; pid: number }[], everyMs = 100) {
  const base = Object.fromEntries(processes.map((p) => [p.name, processMemory(p.pid).rss / MiB]))
  const peak = { ...base }
  const timer = setInterval(() => {
    for (const p of processes) {
      try {
        peak[p.name] = Math.max(peak[p.name]!, processMemory(p.pid).rss / MiB)
      } catch {
        // The process is gone; the run will fail on its own.
      }
    }
  }, everyMs)
  return {
    stop(): { [name: string]: { baselineMiB: number | null; peakMiB: number | null } } {
      clearInterval(timer)
      return Object.fromEntries(processes.map((p) => [p.name, { baselineMiB: round(base[p.name]!, 1), peakMiB: round(peak[p.name]!, 1) }]))
    },
  }
}

/**
 * A large blob end to end: streamed upload to one member, then one broadcast naming it, which publishes the blob
 * to shared storage and has every other member fetch and verify it before confirming; then another of the same
 * size sent privately to every other member over the exchange. Prints MiB/s for each leg and the peak RSS of the
 * sender, one receiver and the IPFS process while the blob flows.
 */
export const blobScenario: Scenario = {
  name: 'blob',
  describe: 'a large blob: upload, broadcast (publish + fetch by every member), download',
  async run(ctx: BenchContext): Promise<{ [key: string]: Json }> {
    const size = ctx.options.blobMiB * MiB
    const [sender, receiver] = ctx.members
    const watched = ctx.processes.filter((p) => p.name === sender!.node || p.name === receiver!.node || p.name === 'ipfs')
    const rss = sampleRss(watched)

    const bytes = patternBytes(size, 42)
    let t = Date.now()
    const up = await uploadBlob(sender!, NAMESPACE, bytes.stream, { filename: 'bench.bin', autometa: true })
    const uploadSeconds = (Date.now() - t) / 1000
    if (up.status !== 200) throw new Error(`upload answered ${up.status}: ${JSON.stringify(up.body)}`)
    if (up.body.blob?.hash !== bytes.digest()) throw new Error('the uploaded blob hash differs from what was sent')
    ctx.log(`upload: ${ctx.options.blobMiB} MiB in ${uploadSeconds.toFixed(1)} s = ${(ctx.options.blobMiB / uploadSeconds).toFixed(1)} MiB/s`)
    throwIfAborted(ctx.signal)

    t = Date.now()
    const res = await postJson(`${nsBase(sender!, NAMESPACE)}/messages/broadcast`, { header: { tag: 'bench-blob' }, data: [{ id: up.body.id }] })
    if (res.status !== 202) throw new Error(`broadcast answered ${res.status}: ${res.text}`)
    const id = (JSON.parse(res.text) as { header: { id: string } }).header.id
    const confirmedSeconds = await confirmedEverywhere(ctx, id, t)
    const slowest = Math.max(...Object.values(confirmedSeconds))
    ctx.log(`broadcast: confirmed on every member ${slowest.toFixed(1)} s after the 202 = ${(ctx.options.blobMiB / slowest).toFixed(1)} MiB/s (${JSON.stringify(confirmedSeconds)})`)

    t = Date.now()
    const down = await downloadBlob(receiver!, NAMESPACE, up.body.id)
    const downloadSeconds = (Date.now() - t) / 1000
    if (down.sha256 !== up.body.blob.hash) throw new Error(`${receiver!.org} serves a blob with another hash`)
    ctx.log(`download from ${receiver!.org}: ${(ctx.options.blobMiB / downloadSeconds).toFixed(1)} MiB/s`)

    const memory = rss.stop()
    for (const [name, m] of Object.entries(memory)) ctx.log(`rss ${name}: baseline ${m.baselineMiB} MiB, peak ${m.peakMiB} MiB`)
    throwIfAborted(ctx.signal)

    // Privately: another blob of the same size, sent to a group of every other member over the exchange (never IPFS).
    const privateRss = sampleRss(ctx.processes.filter((p) => p.name === sender!.node || p.name === receiver!.node))
    const other = patternBytes(size, 43)
    const up2 = await uploadBlob(sender!, NAMESPACE, other.stream, { filename: 'bench-private.bin', autometa: true })
    if (up2.status !== 200) throw new Error(`upload answered ${up2.status}: ${JSON.stringify(up2.body)}`)
    t = Date.now()
    const group = { members: ctx.members.slice(1).map((m) => ({ identity: m.org })) }
    const sentPrivately = await postJson(`${nsBase(sender!, NAMESPACE)}/messages/private`, { header: { tag: 'bench-blob-private' }, group, data: [{ id: up2.body.id }] })
    if (sentPrivately.status !== 202) throw new Error(`private send answered ${sentPrivately.status}: ${sentPrivately.text}`)
    const privateConfirmed = await confirmedEverywhere(ctx, (JSON.parse(sentPrivately.text) as { header: { id: string } }).header.id, t)
    const privateSlowest = Math.max(...Object.values(privateConfirmed))
    const privateMemory = privateRss.stop()
    ctx.log(
      `private: confirmed on every member ${privateSlowest.toFixed(1)} s after the 202 = ${(ctx.options.blobMiB / privateSlowest).toFixed(1)} MiB/s (${JSON.stringify(privateConfirmed)}); ` +
        Object.entries(privateMemory).map(([name, m]) => `rss ${name} baseline ${m.baselineMiB} MiB, peak ${m.peakMiB} MiB`).join('; '),
    )
    return {
      sizeMiB: ctx.options.blobMiB,
      uploadMiBps: round(ctx.options.blobMiB / uploadSeconds, 1),
      broadcastMiBps: round(ctx.options.blobMiB / slowest, 1),
      confirmedSeconds: Object.fromEntries(Object.entries(confirmedSeconds).map(([k, v]) => [k, round(v, 2)])),
      downloadMiBps: round(ctx.options.blobMiB / downloadSeconds, 1),
      rss: { sender: memory[sender!.node]!, receiver: memory[receiver!.node]!, ipfs: memory['ipfs'] ?? null },
      privateMiBps: round(ctx.options.blobMiB / privateSlowest, 1),
      privateRss: { sender: privateMemory[sender!.node]!, receiver: privateMemory[receiver!.node]! },
    }
  },
}

/** Seconds from `t0` until each member has confirmed the message (a receiver answers 404 until its batch is here). */
async function confirmedEverywhere(ctx: BenchContext, id: string, t0: number): Promise<{ [org: string]: number }> {
  const confirmedSeconds: { [org: string]: number } = {}
  while (Object.keys(confirmedSeconds).length < ctx.members.length) {
    throwIfAborted(ctx.signal)
    for (const m of ctx.members) {
      if (confirmedSeconds[m.org] !== undefined) continue
      const res = await get(`${nsBase(m, NAMESPACE)}/messages/${id}`, 30_000)
      if (res.status === 404) continue
      if (res.status !== 200) throw new Error(`${m.org}: GET message answered ${res.status}: ${res.text}`)
      const msg = JSON.parse(res.text) as { state: string }
      if (msg.state === 'confirmed') confirmedSeconds[m.org] = (Date.now() - t0) / 1000
      if (msg.state === 'rejected') throw new Error(`${m.org} rejected the blob message`)
    }
    await sleep(100, ctx.signal)
  }
  return confirmedSeconds
}
