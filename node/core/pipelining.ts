import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'

export type RequestListener = (req: IncomingMessage, res: ServerResponse) => void

/** How many requests may wait behind the one being served on a connection, unless a server says otherwise. */
export const DEFAULT_QUEUED_REQUESTS = 4

/**
 * How many requests past `queued` may still arrive on a connection before it is closed: those a client had in flight
 * when its reading stopped. Node parses a read whole (64 KiB holds some 2,000 minimal requests) and keeps every request
 * and answer object of the connection until its turn, so only closing the connection frees them.
 */
export const OVERFLOW_REQUESTS = 32

/** What happens past the bound: the connection closed, and `onOverflow` told (to log it, naming the knob). */
export interface OverflowOptions {
  /** Requests that may wait on a connection before it is closed (default `queued + OVERFLOW_REQUESTS`). */
  closeAfter?: number
  onOverflow?: (socket: Socket, waiting: number) => void
}

/**
 * Serves each connection's requests one at a time, in order, with at most `queued` waiting behind the one being
 * served; past that the connection is not read until they are served (TCP backpressure on the client).
 *
 * Node's HTTP server hands over every request of a socket read as soon as it is parsed, so a client that pipelines
 * thousands of requests in one write gets thousands of handlers running at once, each building its answer, which
 * then waits in memory behind the earlier ones: one socket could take the member's memory and event loop. Here a
 * request's handler starts only once the previous answer on its connection has been handed to the kernel ('finish'),
 * so a connection holds at most one answer unsent however slowly its client reads, and in a turn of the event loop of
 * its own, so that every other connection is read in between. Requests already parsed from the read that filled the
 * queue still wait their turn (Node parses a read whole), up to `closeAfter`: a connection with more waiting is closed
 * at once, as nothing else frees what Node holds for it (an answer out of turn would be taken by the client for the
 * answer to an earlier request). A connection that can no longer be written to drops whatever still waits.
 */
export function inTurn(listener: RequestListener, queued: number, overflow: OverflowOptions = {}): RequestListener {
  const bound = { closeAfter: overflow.closeAfter ?? queued + OVERFLOW_REQUESTS, onOverflow: overflow.onOverflow }
  const turns = new WeakMap<Socket, ConnectionTurns>()
  const later = new OnePerTurn()
  return (req, res) => {
    const socket = req.socket
    let turn = turns.get(socket)
    if (!turn) {
      turn = new ConnectionTurns(socket, listener, queued, bound, later)
      turns.set(socket, turn)
    }
    turn.add(req, res)
  }
}

class ConnectionTurns {
  private readonly waiting: [IncomingMessage, ServerResponse][] = []
  private serving = false
  private closed = false
  /** Whether this connection's reading was stopped here, so that it is started again only here. */
  private held = false
  /** The answer being built, while one is. */
  private current: ServerResponse | undefined

  constructor(
    private readonly socket: Socket,
    private readonly listener: RequestListener,
    private readonly queued: number,
    private readonly bound: Required<Pick<OverflowOptions, 'closeAfter'>> & Pick<OverflowOptions, 'onOverflow'>,
    private readonly later: OnePerTurn,
  ) {
    socket.once('close', () => {
      this.closed = true
      this.waiting.length = 0
    })
    // Node starts reading a socket again on its own whenever an answer ends (it drains the request's unread body,
    // which resumes the socket): while the queue is full the socket is stopped again in the same turn, before
    // anything more is read.
    socket.on('resume', () => {
      if (this.held) socket.pause()
    })
  }

  add(req: IncomingMessage, res: ServerResponse): void {
    if (this.closed) return
    if (!this.serving) {
      this.serve(req, res)
      return
    }
    if (this.waiting.length >= this.bound.closeAfter) {
      const waiting = this.waiting.length
      this.closed = true
      this.waiting.length = 0
      this.socket.destroy()
      const current = this.current
      this.socket.once('close', () => setImmediate(() => forgetParsed(this.socket, current)))
      this.bound.onOverflow?.(this.socket, waiting)
      return
    }
    this.waiting.push([req, res])
    if (this.waiting.length >= this.queued && !this.held) {
      this.held = true
      this.socket.pause()
    }
  }

  private serve(req: IncomingMessage, res: ServerResponse): void {
    this.serving = true
    this.current = res
    let done = false
    const next = (): void => {
      if (done) return
      done = true
      this.current = undefined
      const following = this.waiting.shift()
      if (this.held && this.waiting.length < this.queued) {
        this.held = false
        // Node may hold the socket itself (its own backpressure on unsent output): it then stops it again.
        this.socket.resume()
      }
      if (!following) {
        this.serving = false
        return
      }
      // The next request waits for a turn of the event loop of its own: an answer handed to a fast reader ends within
      // the turn, and a handler that needs no I/O (a page read from the in-memory database) answers in it too, so
      // served at once a pipelined connection would chain request after request without ever letting the loop read
      // another socket. Meanwhile this connection still counts as served, so that what it sends next keeps its place.
      this.later.add(() => {
        // A socket that can no longer be written to (the client reset it, or Node ended it after the client's end)
        // would only have answers built for nobody.
        if (this.closed || !this.socket.writable) {
          this.serving = false
          this.waiting.length = 0
          return
        }
        this.serve(following[0], following[1])
      })
    }
    res.once('finish', next)
    res.once('close', next)
    this.listener(req, res)
  }
}

/**
 * Node keeps every request it parsed on a connection, and its answer object, in a list of the connection's that it
 * lets go of only as their turns come; the handler being served holds its answer until it ends (a `?confirm=true` wait,
 * minutes), and through it that list: the socket's listeners, the answer's 'finish' listener (which hands the socket
 * to the next answer) and its count of unsent bytes are bound to it. Once the socket has closed none of them has
 * anything left to do (an answer to a closed socket never finishes, nor sends): dropping them leaves the handler
 * holding its own request only, some 3.5 MiB less per connection flooded with one read of minimal requests. A
 * listener for 'error' stays, so that a late write cannot throw.
 */
function forgetParsed(socket: Socket, current: ServerResponse | undefined): void {
  socket.removeAllListeners()
  socket.on('error', () => {})
  if (!current) return
  for (const listener of current.listeners('finish')) {
    if (listener.name === NODE_HANDOVER) current.off('finish', listener as () => void)
  }
  ;(current as unknown as NodeAnswerInternals)._onPendingData = () => {}
}

/** The name of Node's listener on an answer's 'finish' that hands the connection to the next (lib/_http_server.js). */
const NODE_HANDOVER = 'bound resOnFinish'

/** Node's count of a connection's unsent bytes, kept by every answer (OutgoingMessage; bound to the connection's list). */
interface NodeAnswerInternals {
  _onPendingData: (delta: number) => void
}

/**
 * Starts the waiting requests of every connection one per turn of the event loop, in the order their connections
 * became ready: between two of them the loop reads every socket, so a request that arrives on a connection of its
 * own waits for at most one pipelined request to be handled, however many connections pipeline.
 */
class OnePerTurn {
  private readonly starts: (() => void)[] = []
  private armed = false

  add(start: () => void): void {
    this.starts.push(start)
    if (this.armed) return
    this.armed = true
    setImmediate(this.run)
  }

  private readonly run = (): void => {
    try {
      this.starts.shift()?.()
    } finally {
      // Even past a handler that threw: the other connections' requests still get their turns.
      if (this.starts.length > 0) setImmediate(this.run)
      else this.armed = false
    }
  }
}
