import { PassThrough } from 'node:stream'
import type { ImportCandidate } from 'ipfs-unixfs-importer'
import { parseAddSettings } from './add-options.js'
import { IpfsError, errorMessage } from './errors.js'
import { parseMultipart, type Part } from './multipart.js'
import type { Handler } from './rpc.js'

/** kubo-rpc-client URI-encodes file names; Kubo decodes them. A name that does not decode is taken as sent. */
function decodeName(name: string): string {
  try {
    return decodeURIComponent(name)
  } catch {
    return name
  }
}

async function* candidates(parts: AsyncIterable<Part>): AsyncGenerator<ImportCandidate> {
  for await (const part of parts) {
    const path = decodeName(part.filename)
    if (part.contentType === 'application/x-directory') yield { path }
    else yield { path, content: part.body }
  }
}

/**
 * `add`: the multipart body is parsed as it arrives and each file streams through the importer into the
 * blockstore. The answer is Kubo's: one JSON line per file as it completes (plus progress lines when asked).
 * Nothing is sent until the first line exists, so an error before that still gets a proper status and body;
 * an error after it breaks the connection, so the client cannot mistake a partial answer for a whole one.
 */
export const add: Handler = async (ctx, { store, log }) => {
  const settings = parseAddSettings(ctx.URL.searchParams)
  // A parse that stops early discards the rest of the body and keeps the socket, so the error answer can be sent.
  const parts = parseMultipart(ctx.req, ctx.get('Content-Type') || undefined)
  const out = new PassThrough()
  let started = false
  let markStarted = (): void => undefined
  const startedSignal = new Promise<void>((res) => (markStarted = res))
  const emit = (line: object): void => {
    if (out.destroyed) return // the client went away; the import stops when the request stream fails
    out.write(JSON.stringify(line) + '\n')
    if (!started) {
      started = true
      markStarted()
    }
  }
  const onRead = settings.progress ? (name: string, bytes: bigint) => emit({ Name: name, Bytes: Number(bytes) }) : undefined
  const outcome = (async (): Promise<unknown> => {
    let files = 0
    for await (const r of store.add(candidates(parts), settings, onRead)) {
      const hash = r.cid.toString()
      // As Kubo: unnamed content (stdin) is reported under its own CID, the wrapping directory under no name.
      const name = r.path !== '' ? r.path : r.directory ? '' : hash
      emit({ Name: name, Hash: hash, Size: r.size.toString() })
      files++
    }
    if (files === 0) throw new IpfsError('bad-request', 'argument "path" is required')
    return undefined
  })().catch((err: unknown) => err ?? new Error('add failed'))

  await Promise.race([startedSignal, outcome])
  if (!started) {
    const err = await outcome
    if (err !== undefined) throw err
  }
  ctx.status = 200
  ctx.type = 'application/json'
  ctx.set('X-Chunked-Output', '1')
  ctx.body = out
  void outcome.then((err) => {
    if (err === undefined) {
      out.end()
      return
    }
    log(`ipfs api: add failed after output began: ${errorMessage(err)}`)
    // Cut the stream (logged just above, so without an error of its own): the response is torn down mid-body.
    out.destroy()
  })
}
