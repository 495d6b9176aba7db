import { expect } from 'chai'
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { assertPortFree, freePort, PortBusyError, processCpuSeconds, reapedChildrenCpuSeconds } from '../../../network/process.js'

describe('process helpers', () => {
  it('names a busy port', async () => {
    const port = await freePort()
    const srv = createServer().listen(port, '127.0.0.1')
    await new Promise((r) => srv.once('listening', r))
    try {
      const err = await assertPortFree(port, 'test').then(() => null, (e: unknown) => e)
      expect(err).to.be.instanceOf(PortBusyError)
      expect((err as Error).message).to.contain(String(port))
    } finally {
      srv.close()
    }
  })

  it('picks listening ports below the ephemeral range, where outgoing connections never take them', async () => {
    const ephemeralLow = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0])
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()))
    for (const p of ports) expect(p).to.be.within(10_000, ephemeralLow - 1)
    const base = await freePort(110)
    expect(base + 110).to.be.below(ephemeralLow)
    await assertPortFree(base, 'the port it answered')
  })

  it("counts a process's children once it reaped them, and not its own time", async () => {
    // A shell that runs a busy child to its end, waits for it, then sleeps: the child's CPU is then the shell's reaped.
    // The child spins until it has used 300 ms of CPU, not of the clock: on a loaded machine 300 ms of the clock gave
    // it less than the 200 ms asserted.
    const shell = spawn('sh', ['-c', `${JSON.stringify(process.execPath)} -e "const t = process.cpuUsage(); while (process.cpuUsage(t).user < 300000);"; sleep 5`], { stdio: 'ignore' })
    try {
      const deadline = Date.now() + 10_000
      while (reapedChildrenCpuSeconds(shell.pid!) < 0.2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
      expect(reapedChildrenCpuSeconds(shell.pid!)).to.be.at.least(0.2)
      expect(processCpuSeconds(shell.pid!)).to.be.below(0.1)
    } finally {
      shell.kill('SIGKILL')
    }
  })
})
