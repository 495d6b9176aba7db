/**
 * The local chain: `node .build/<id>/chain.js --dir D --port P --hardhat-config .build/<id>/hardhat.config.cjs`
 * as the network starts it (compiled by network/build.ts), or `node --import tsx network/chain/main.ts --dir D
 * --port P [--host H]` from source (Hardhat then loads hardhat.config.ts through tsx). Started on its own, from a
 * config file instead: `--config F` (`npm run chain -- --config F`; network/hosts/service-config.ts).
 *
 * A Hardhat network (chain id 31337, automine) served over HTTP and WebSocket JSON-RPC on H:P (127.0.0.1 unless told), as
 * `hardhat node` serves it. Hardhat keeps its chain in memory only; this process makes it durable with a
 * journal in D (see journal.ts): the same genesis on every start, and every mined block replayed before the
 * port opens, so a restarted chain has the same blocks, logs and contract as before. Mining can be switched
 * off and blocks mined on demand (see journaled-provider.ts); a start always automines again, after mining
 * the transactions that were still pending when the chain stopped.
 */
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { keccak256 } from 'ethers'
import { errorMessage } from '../../node/core/errors.js'
import { assertPortFree, PortBusyError, sleep } from '../process.js'
import { loadChainConfig, ServiceConfigError } from '../hosts/service-config.js'
import { CHAIN_ID, loadHardhat } from './hardhat.js'
import { ChainJournal } from './journal.js'
import { JournaledProvider } from './journaled-provider.js'
import { replayJournal, resendPending } from './replay.js'

function fail(line: string): never {
  console.log(`chain: ${line}`)
  process.exit(1)
}

function parseCli(): { dir: string; port: number; host: string; hardhatConfig: string | undefined } {
  let values: { dir?: string; port?: string; host?: string; config?: string; 'hardhat-config'?: string }
  try {
    ;({ values } = parseArgs({ options: { dir: { type: 'string' }, port: { type: 'string' }, host: { type: 'string' }, config: { type: 'string' }, 'hardhat-config': { type: 'string' } }, strict: true }))
  } catch (err) {
    fail(errorMessage(err))
  }
  const hardhatConfig = values['hardhat-config'] === undefined ? undefined : resolve(values['hardhat-config'])
  if (values.config !== undefined) {
    if (values.dir !== undefined || values.port !== undefined || values.host !== undefined) fail('--config names the folder, port and host: give it alone, or --dir, --port and --host')
    try {
      return { ...loadChainConfig(values.config), hardhatConfig }
    } catch (err) {
      fail(err instanceof ServiceConfigError ? err.message : errorMessage(err))
    }
  }
  if (values.dir === undefined) fail('--dir <state folder> (or --config <file>) is required')
  const port = Number(values.port ?? '8545')
  if (!Number.isInteger(port) || port < 1 || port > 65535) fail(`--port must be a TCP port, not ${values.port}`)
  return { dir: resolve(values.dir), port, host: values.host ?? '127.0.0.1', hardhatConfig }
}

async function main(): Promise<void> {
  const { dir, port, host, hardhatConfig } = parseCli()
  // Checked before the (slow) replay, so a busy port is reported at once; listen() below covers the race.
  await assertPortFree(port, 'chain JSON-RPC', host).catch((err: unknown) =>
    fail(err instanceof PortBusyError ? err.message : errorMessage(err)),
  )
  process.on('uncaughtException', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EADDRINUSE') fail(new PortBusyError(port, 'chain JSON-RPC', host).message)
    fail(`fatal: ${err.stack ?? err.message}`)
  })

  const journal = new ChainJournal(dir)
  const genesis = journal.readGenesis()
  const { blocks, pending, droppedTornTail } = journal.read()
  if (genesis === undefined && (blocks.length > 0 || pending.length > 0)) fail(`${dir} has a chain journal but no genesis record`)
  if (droppedTornTail) console.log('chain: dropped a journal entry cut short by a crash (its request was never answered)')

  const hh = await loadHardhat({
    genesisTimestamp: genesis?.timestamp ?? Math.floor(Date.now() / 1000),
    hardfork: genesis?.hardfork,
    configFile: hardhatConfig,
  })
  const request = (method: string, params: unknown[] = []): Promise<unknown> => hh.provider.request({ method, params })
  const first = (await request('eth_getBlockByNumber', ['0x0', false])) as { hash: string; timestamp: string }
  if (genesis === undefined) {
    journal.writeGenesis({
      version: 1,
      chainId: CHAIN_ID,
      hardfork: hh.hre.config.networks.hardhat.hardfork,
      timestamp: Number(first.timestamp),
      hash: first.hash,
    })
  } else if (first.hash !== genesis.hash) {
    console.log(`chain: genesis hash ${first.hash} differs from the recorded ${genesis.hash} (Hardhat changed?); block hashes will differ`)
  }

  const replayed = await replayJournal(hh.provider, blocks).catch((err: unknown) => fail(errorMessage(err)))
  if (replayed.hashMismatches > 0) {
    console.log(`chain: ${replayed.hashMismatches} of ${replayed.blocks} replayed block hashes differ from the original run`)
  }
  // Replaying leaves Hardhat's clock at the last block's timestamp; bring it forward to the wall clock so that
  // new blocks are stamped with the real time again.
  const latest = (await request('eth_getBlockByNumber', ['latest', false])) as { number: string; timestamp: string }
  const behind = Math.floor(Date.now() / 1000) - Number(latest.timestamp)
  if (behind > 0) await request('evm_increaseTime', [behind])

  // Accepted, answered with their hash, and not mined before the stop: sent again and mined now, so no client's
  // transaction is lost. Then mining is on again, whatever it was: every mining control ends with the process.
  const seen = new Set<string>()
  const unmined = pending.filter((raw) => {
    const hash = keccak256(raw)
    if (replayed.mined.has(hash) || seen.has(hash)) return false
    seen.add(hash)
    return true
  })
  const served = new JournaledProvider(hh.provider, journal, (err) => {
    journal.close()
    fail(`${err.message}; exiting so that a restart replays the journal`)
  }, unmined)
  if (unmined.length > 0) {
    const r = await resendPending(served, unmined).catch((err: unknown) => fail(`sending pending transactions again: ${errorMessage(err)}`))
    // Replaced transactions stay in the journal as pending records: alone they are not news at every start.
    if (r.resent > 0 || r.failed.length > 0) {
      console.log(
        `chain: ${unmined.length} transaction(s) were pending when the chain stopped: ${r.mined} mined now in ${r.blocks} block(s)` +
          (r.waiting > 0 ? `, ${r.waiting} still pending (an earlier nonce missing, or too low a fee)` : '') +
          (r.replaced > 0 ? `, ${r.replaced} replaced by a transaction of the same nonce` : '') +
          (r.failed.length > 0 ? `, ${r.failed.length} refused (${r.failed.map((f) => `${f.hash}: ${f.error}`).join('; ')})` : ''),
      )
    }
  }
  await served.request({ method: 'evm_setAutomine', params: [true] })
  const head = Number(await request('eth_blockNumber'))
  const server = await hh.createServer(host, port, served)
  await server.listen()
  console.log(`chain ready rpc=http://${host}:${port} blocks=${head}`)

  let stopping = false
  const stop = async (): Promise<void> => {
    if (stopping) return
    stopping = true
    // Let a request that is mining finish journaling; every answered request is already on disk.
    await Promise.race([served.drain(), sleep(2000)])
    journal.close()
    // Open WebSocket clients can hold the server open; nothing is left to flush, so exit without waiting.
    void server.close().catch(() => undefined)
    process.exit(0)
  }
  process.on('SIGTERM', () => void stop())
  process.on('SIGINT', () => void stop())
}

main().catch((err: unknown) => fail(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`))
