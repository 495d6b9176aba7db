import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'

export type RequestListener = (req: IncomingMessage, res: ServerResponse) => void

/** How many requests may wait behind the one being served on a connection, unless a server says otherwise. */
export const DEFAULT_QUEUED_REQUESTS = 4

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
 * queue still wait their turn (Node parses a read whole): a connection holds at most one read's worth beyond the
 * bound. A connection that can no longer be written to drops whatever still waits.
 */
export function inTurn(listener: RequestListener, queued: number): RequestListener {
  const turns = new WeakMap<Socket, ConnectionTurns>()
  const later = new OnePerTurn()
  return (req, res) => {
    const socket = req.socket
    let turn = turns.get(socket)
    if (!turn) {
      turn = new ConnectionTurns(socket, listener, queued, later)
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

  constructor(
    private readonly socket: Socket,
    private readonly listener: RequestListener,
    private readonly queued: number,
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
    this.waiting.push([req, res])
    if (this.waiting.length >= this.queued && !this.held) {
      this.held = true
      this.socket.pause()
    }
  }

  private serve(req: IncomingMessage, res: ServerResponse): void {
    this.serving = true
    let done = false
    const next = (): void => {
      if (done) return
      done = true
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
