import busboy from 'busboy'
import type { Context } from 'koa'
import { ParleyError, errorMessage, isParleyError } from '../core/errors.js'
import { overLimit, type RequestLimits } from '../core/limits.js'
import { bodyContext } from './body-budget.js'
import { discardRest as dropRest } from './discard.js'

export interface MultipartLimits {
  /** Bytes of one form field; a longer field is refused rather than silently cut (busboy's default is to truncate). */
  fieldBytes?: number
  /** Form fields in all. */
  fields?: number
  /** Parts in all, fields and files. */
  parts?: number
}

export const DEFAULT_MULTIPART_LIMITS: Required<MultipartLimits> = { fieldBytes: 1024 * 1024, fields: 32, parts: 64 }

export interface FilePart {
  /** The form name of the part (FireFly takes the first part with a filename, whatever its name). */
  name: string
  /** The part's filename without any directory, as Go's `FileName()` gives it. */
  filename: string
  /** The part's content type without parameters; `text/plain` when the part has none (busboy's default). */
  mimeType: string
  /**
   * The part's bytes as they arrive, read at the consumer's pace (the request is paused while the consumer is
   * busy). Throws the form's failure — a malformed body, a disconnected client — so a consumer writing a file
   * stops and discards it.
   */
  chunks: AsyncIterable<Buffer>
}

export interface MultipartForm {
  /** The fields that came before the file, by name; a repeated name keeps the last value, as FireFly's map does. */
  fields: ReadonlyMap<string, string>
  file: FilePart
  /**
   * Resolves once the whole body has been read and was well formed, with nothing but the closing boundary after
   * the file. Resolves only after the file's chunks have been consumed to their end.
   */
  finished(): Promise<void>
  /**
   * Stops reading the form (a no-op once it finished): the file's chunks fail, the rest of the body is discarded
   * and the connection is closed after the answer, so an abandoned multi-gigabyte upload is not read to its end.
   */
  abandon(): void
}

const badRequest = (message: string): ParleyError => new ParleyError('BAD_REQUEST', message)

/**
 * Reads a `multipart/form-data` request the way FireFly's SDK sends an upload: form fields first, then one file
 * part. Resolves as soon as the file part starts, with the fields so far and the file as a stream; the caller
 * consumes the file, then awaits `finished()` to learn whether the rest of the form was acceptable.
 *
 * busboy pushes, the caller pulls: busboy holds its write callback while the file stream is full, so the
 * request is piped with backpressure and memory stays at a few chunks whatever the file size. A request closed
 * before its end is never reported by `pipe`, so it is watched here and turned into a failure of the file stream,
 * which is what makes a blob write stop and remove its temporary file.
 */
export function readMultipart(ctx: Context, limits: MultipartLimits = {}): Promise<MultipartForm> {
  const req = ctx.req
  const lim = { ...DEFAULT_MULTIPART_LIMITS, ...limits }
  const { limits: member } = bodyContext(ctx)
  // The file is counted exactly as it streams (the blob store stops at the limit); a declared length that no form
  // within the limits could reach is refused before a byte is read.
  const declared = Number(ctx.get('content-length') || 0)
  const most = member.uploadBytes + lim.fields * lim.fieldBytes + MULTIPART_FRAMING_BYTES
  let received = 0
  if (declared > most) {
    discardRest(ctx, member, received)
    return Promise.reject(overLimit('uploadBytes', member.uploadBytes, `the upload is ${declared} bytes, more than a file within the limit and its form fields can take`))
  }
  let bb: busboy.Busboy
  try {
    // fieldSize one over the limit: a field of exactly the limit is whole, one byte more marks it truncated.
    // Filenames are UTF-8 as browsers and Go send them (busboy's default would read them as Latin-1).
    bb = busboy({ headers: req.headers, defParamCharset: 'utf8', limits: { fieldSize: lim.fieldBytes + 1, fields: lim.fields, parts: lim.parts } })
  } catch (err) {
    discardRest(ctx, member, received)
    return Promise.reject(badRequest(`not a multipart/form-data upload: ${errorMessage(err)}`))
  }

  const fields = new Map<string, string>()
  let file: FilePart | undefined
  let failure: Error | undefined
  let done = false
  let resolveHead!: (form: MultipartForm) => void
  let rejectHead!: (err: Error) => void
  const head = new Promise<MultipartForm>((res, rej) => {
    resolveHead = res
    rejectHead = rej
  })
  let resolveEnd!: () => void
  let rejectEnd!: (err: Error) => void
  const end = new Promise<void>((res, rej) => {
    resolveEnd = res
    rejectEnd = rej
  })
  // Observed through finished() when the caller gets that far; a rejection nobody awaits must not stop the process.
  end.catch(() => {})

  const fail = (err: Error): void => {
    if (failure || done) return
    failure = err
    rejectHead(err)
    rejectEnd(err)
    // Destroying busboy destroys the file stream it is feeding with the same error.
    bb.destroy(err)
    discardRest(ctx, member, received)
  }

  bb.on('field', (name, value, info) => {
    if (file) return fail(badRequest(`form field ${JSON.stringify(name)} comes after the file part; send the fields first`))
    if (info.valueTruncated) return fail(new ParleyError('PAYLOAD_TOO_LARGE', `form field ${JSON.stringify(name)} is longer than ${lim.fieldBytes} bytes`))
    if (name === 'file') return fail(badRequest('the part "file" has no filename; send the blob as a file part (Content-Disposition filename)'))
    fields.set(name, value)
  })
  bb.on('file', (name, stream, info) => {
    // A destroyed stream emits 'error'; with no listener that would be an uncaught exception.
    stream.on('error', () => {})
    if (file || failure) {
      stream.resume()
      return fail(badRequest(`a second file part (${JSON.stringify(name)}) follows the file; an upload carries one file`))
    }
    const chunks = async function* (): AsyncGenerator<Buffer> {
      try {
        for await (const chunk of stream) yield chunk as Buffer
      } catch (err) {
        throw failure ?? badRequest(`the file part could not be read: ${errorMessage(err)}`)
      }
      // Caught while the consumer was still reading what busboy had buffered: stop before the blob is kept.
      if (failure) throw failure
    }
    file = { name, filename: info.filename ?? '', mimeType: info.mimeType, chunks: chunks() }
    resolveHead({ fields, file, finished: () => end, abandon: () => fail(badRequest('the upload was abandoned')) })
  })
  bb.on('fieldsLimit', () => fail(badRequest(`the form has more than ${lim.fields} fields`)))
  bb.on('partsLimit', () => fail(badRequest(`the form has more than ${lim.parts} parts`)))
  bb.on('error', (err: unknown) => fail(isParleyError(err) ? err : badRequest(`malformed multipart body: ${errorMessage(err)}`)))
  // 'finish' comes only after every file stream has been read to its end.
  bb.on('finish', () => {
    if (failure) return
    if (!file) return fail(badRequest('the form has no file part; send the blob as a part with a filename'))
    done = true
    resolveEnd()
  })
  bb.on('close', () => fail(badRequest('the multipart body ended early')))

  // A request torn down mid-body (client gone) ends nothing that pipe() passes on; without this the file stream
  // would wait forever. An unconsumed remainder is lost with the request too, hence readableEnded, not complete.
  const gone = (): void => fail(badRequest('the client closed the connection before the upload was complete'))
  req.on('error', gone)
  req.on('close', () => {
    if (!req.readableEnded) gone()
  })
  req.pipe(bb)
  // Memory stays bounded while a client stalls mid-upload (backpressure), but its socket and blob file would not.
  const idle = setTimeout(() => {
    // Paused by backpressure (the blob store is slow to take what came), the client is not the one idling.
    if (req.readableFlowing === false) return idle.refresh()
    fail(badRequest(`the upload stopped arriving for ${member.bodyIdleMs} ms (limits.bodyIdleMs)`))
  }, member.bodyIdleMs)
  idle.unref()
  req.on('data', (chunk: Buffer) => {
    received += chunk.length
    idle.refresh()
  })
  const stop = (): void => clearTimeout(idle)
  end.then(stop, stop)
  return head
}

/** Boundaries, part headers and the closing delimiter: generous, so no well-formed form is refused for them. */
const MULTIPART_FRAMING_BYTES = 64 * 1024

/**
 * Stops feeding the form and leaves the rest of the body to node/api/discard.ts: read and dropped up to a bound when
 * it is short enough for the client to get its answer, the connection closed after the answer otherwise.
 */
function discardRest(ctx: Context, limits: RequestLimits, received: number): void {
  const req = ctx.req
  req.unpipe()
  // Also when complete: a paused request with unread bytes would keep its keep-alive socket stopped.
  req.resume()
  dropRest(ctx, limits, received)
}
