import type { Readable } from 'node:stream'
import busboy from 'busboy'
import { IpfsError, errorMessage } from './errors.js'

/**
 * The parts of an `ipfs add` body (multipart/form-data), read with busboy as they arrive: each part's body streams
 * from the request, so a file of any size passes through a few chunks of memory. Contract: consume (or abandon) a
 * part's body before asking for the next part; an unread rest is skipped.
 */
export interface Part {
  /** The `name` parameter of Content-Disposition (Kubo clients send `file`, `file-1`, `dir`...). */
  name: string
  /** The `filename` parameter, as sent (kubo-rpc-client URI-encodes it); empty when the part has none. */
  filename: string
  contentType: string
  body: AsyncIterable<Uint8Array>
}

/**
 * A part with no filename and a type other than application/octet-stream is a form field to busboy, which holds it
 * whole: Kubo clients send file content as octet-stream, so such a part is small text (`curl -F 'file=<x'`).
 */
const MAX_FIELD_BYTES = 1024 * 1024
const MAX_HEADER_PAIRS = 64

const badRequest = (message: string): IpfsError => new IpfsError('bad-request', `multipart: ${message}`)

/** busboy's words, in the form the RPC API has always answered with. */
function described(err: unknown): IpfsError {
  if (err instanceof IpfsError) return err
  const message = errorMessage(err)
  if (/^Unexpected end of (form|file)$/.test(message)) return badRequest('unexpected end of body')
  if (message === 'Malformed part header') return badRequest('malformed part header')
  return badRequest(message.charAt(0).toLowerCase() + message.slice(1))
}

/** Refuses a body that is not multipart before a byte of it is read. */
function checkType(contentType: string | undefined): string {
  if (!contentType || !/^multipart\/form-data\s*;/i.test(contentType.trim())) {
    throw badRequest(`expected a multipart/form-data body, got ${contentType ? `"${contentType}"` : 'no Content-Type'}`)
  }
  return contentType
}

/**
 * The parts of `source` (a request body) in order. busboy pushes and the importer pulls: busboy holds its write
 * callback while a part's stream is full, and `source` is piped with backpressure. A source torn down before its end
 * (the client gone) fails the part being read, as a malformed body does.
 */
export async function* parseMultipart(source: Readable, contentType: string | undefined): AsyncGenerator<Part> {
  let bb: busboy.Busboy
  try {
    bb = busboy({
      headers: { 'content-type': checkType(contentType) },
      // Kubo's paths (`dir/file`), not a browser's file names: kept whole. Names are UTF-8, as Go sends them.
      preservePath: true,
      defParamCharset: 'utf8',
      limits: { fieldSize: MAX_FIELD_BYTES + 1, headerPairs: MAX_HEADER_PAIRS },
    })
  } catch (err) {
    throw described(err)
  }
  // Each part with the stream that feeds it (none for a field, held whole).
  const ready: { part: Part; stream?: Readable }[] = []
  let failure: IpfsError | undefined
  let finished = false
  let wake: () => void = () => {}
  const woken = (): Promise<void> => new Promise((res) => (wake = res))
  const fail = (err: unknown): void => {
    if (failure || finished) return
    failure = described(err)
    // Destroying busboy fails the part stream it is feeding with the same error.
    bb.destroy(failure)
    source.unpipe(bb)
    source.resume()
    wake()
  }

  bb.on('file', (name, stream, info) => {
    // A destroyed stream emits 'error'; the body's reader sees it, and without a listener it would be uncaught.
    stream.on('error', () => {})
    const body = async function* (): AsyncGenerator<Uint8Array> {
      try {
        for await (const chunk of stream) yield chunk as Buffer
      } catch (err) {
        throw failure ?? described(err)
      }
      if (failure) throw failure
    }
    ready.push({ part: { name, filename: info.filename ?? '', contentType: info.mimeType, body: body() }, stream })
    wake()
  })
  bb.on('field', (name, value, info) => {
    if (info.valueTruncated) return fail(badRequest(`part ${JSON.stringify(name)} has no filename and more than ${MAX_FIELD_BYTES} bytes; send file content as application/octet-stream`))
    const bytes = Buffer.from(value, 'utf8')
    const body = async function* (): AsyncGenerator<Uint8Array> {
      yield bytes
    }
    ready.push({ part: { name, filename: '', contentType: info.mimeType, body: body() } })
    wake()
  })
  bb.on('error', fail)
  // 'finish' comes only after every part's stream has been read to its end.
  bb.on('finish', () => {
    finished = true
    wake()
  })
  source.on('error', fail)
  source.on('close', () => {
    if (!source.readableEnded) fail(badRequest('the client closed the connection before the body was complete'))
  })
  source.pipe(bb)

  for (;;) {
    const next = ready.shift()
    if (next) {
      yield next.part
      // What the consumer left unread is skipped, so that busboy reaches the next part.
      if (next.stream && !next.stream.readableEnded) next.stream.resume()
      continue
    }
    if (failure) throw failure
    if (finished) return
    await woken()
  }
}
