'use strict'
// What every transport adapter shares: error kinds, a per-command timeout, and blocking waits
// on connections of their own (a blocking command stalls every other command of its
// connection) with a precise local timer (Redis checks blocked-client timeouts only on its
// event-loop tick, 100 ms by default).

/** An Error with the `kind` the core understands: 'server', 'timeout' or 'unavailable'. */
function kindError (kind, message, cause) {
  const err = new Error(message, cause ? { cause } : undefined)
  err.kind = kind
  return err
}

// The package's WebAssembly module, for the core's words in connect errors: each entry of the
// package (index.js, index.mjs) hands it over as it loads, before any transport can connect.
let core = null
function useCore (wasm) {
  core = wasm
}

function loaded () {
  if (!core) throw new Error('crawlq-wasm: load the package (require("crawlq-wasm")) before its transports')
  return core
}

/** The URL without its user info, for messages (`redis://***@host:6379/0`), as the core names it. */
function redactedUrl (url) {
  return loaded().redactedUrl(String(url))
}

/**
 * Refuse a URL of a scheme the native bindings refuse, or of none (`host:port`, which ioredis
 * would read), before a client is made for it: a configuration error in the core's words.
 */
function checkUrl (url) {
  const problem = loaded().redisUrlProblem(String(url))
  if (problem) throw kindError('config', problem)
}

/** A URL the client refused to read (`err`), as a configuration error saying why, in the core's words. */
function urlError (url, err) {
  return kindError('config', `redis URL ${redactedUrl(url)}: ${loaded().whyUrlUnread(String(url), err.message)}`, err)
}

/**
 * A failure to connect (`err`), as the native bindings report it: the server's refusal of the
 * handshake (a wrong password, a database it lacks) and an answer in another protocol (an
 * HTTP port; ioredis's parser says so, node-redis only sees the socket close) are
 * configuration errors, anything else leaves the server unavailable.
 */
function connectFailure (url, err, isReplyError) {
  const context = `connecting to ${redactedUrl(url)}`
  if (err && err.name === 'ParserError') return kindError('config', loaded().notRedisProtocol(context, err.message), err)
  const refusal = isReplyError(err) ? loaded().handshakeRefusal(context, err.message) : undefined
  return refusal ? kindError('config', refusal, err) : kindError('unavailable', `${context}: ${err.message}`, err)
}

/**
 * The socket path and database of a unix socket URL (`unix:///path/to/redis.sock`, optionally
 * `?db=N`; also `redis+unix://`), as the native bindings take them; null for any other URL.
 * Neither node-redis nor ioredis reads such a URL itself.
 */
function unixSocket (url) {
  const match = /^(?:redis\+)?unix:\/\/([^?]+)(?:\?(.*))?$/.exec(url)
  if (!match) return null
  const params = new URLSearchParams(match[2] || '')
  const db = params.has('db') ? Number(params.get('db')) : 0
  if (!Number.isInteger(db) || db < 0) {
    throw kindError('config', `redis URL ${redactedUrl(url)}: db must be a non-negative integer`)
  }
  return { path: decodeURIComponent(match[1]), db }
}

function withTimeout (promise, ms) {
  if (!ms) return promise
  let timer
  const timeout = new Promise((resolve, reject) => {
    timer = setTimeout(() => reject(kindError('timeout', `no reply from Redis within ${ms} ms`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

// What fcallOnce answers when functions are refused.
const REFUSED = Symbol('functions refused')

/**
 * A transport over a client: `run(args)` sends one command on the shared connection,
 * `duplicate()` opens a connection for blocking waits, `isReplyError(err)` tells Redis's
 * error replies from connection failures.
 */
class ClientTransport {
  constructor ({ run, duplicate, isReplyError, close, commandTimeoutMs, retryForMs }) {
    this.run = run
    this.duplicate = duplicate
    this.isReplyError = isReplyError
    this.closeClient = close
    this.commandTimeoutMs = commandTimeoutMs
    this.retryForMs = retryForMs ?? commandTimeoutMs
    this.idle = []
    this.maxIdle = 16
  }

  classify (err) {
    if (err && err.kind) return err
    const message = err && err.message ? err.message : String(err)
    return kindError(this.isReplyError(err) ? 'server' : 'unavailable', message, err)
  }

  // A script Redis certainly did not run (it was loading its data set, busy with another
  // script, or asked to try again) is sent again until retryForMs has passed, as the native
  // client does.
  async evalScript (sha, source, keys, args, fn) {
    const deadline = Date.now() + this.retryForMs
    let delay = 50
    for (;;) {
      try {
        if (fn && this.functions !== false) {
          const reply = await this.fcallOnce(fn, keys, args)
          if (reply !== REFUSED) return reply
          // the server (Redis before 7) or the user's ACL refuses functions: scripts from now on
          this.functions = false
        }
        return await this.evalOnce(sha, source, keys, args)
      } catch (err) {
        const notRun = this.isReplyError(err.cause ?? err) && /^(LOADING|BUSY|TRYAGAIN|MASTERDOWN)\b/.test(err.message)
        if (!notRun || Date.now() + delay >= deadline) throw err
        await new Promise(resolve => setTimeout(resolve, delay))
        delay = Math.min(delay * 2, 1000)
      }
    }
  }

  // The operation as a Redis function, as the native clients run it (its seen epoch tells a
  // server restart, so the known-seen cache can keep what it learns): FCALL, and when Redis
  // does not have the function, FUNCTION LOAD of the library that defines it, then FCALL
  // again. REFUSED when Redis or the ACL will not run functions (nothing ran).
  async fcallOnce (fn, keys, args) {
    const send = command => withTimeout(this.run(command), this.commandTimeoutMs)
    const fcall = () => send(['FCALL', fn.name, String(keys.length), ...keys, ...args])
    const refused = err => this.isReplyError(err) && /^(NOPERM|ERR unknown (sub)?command)/.test(err.message)
    try {
      return await fcall()
    } catch (err) {
      if (refused(err)) return REFUSED
      if (!(this.isReplyError(err) && /^ERR Function not found/.test(err.message))) throw this.classify(err)
    }
    try {
      await send(['FUNCTION', 'LOAD', 'REPLACE', fn.library])
      return await fcall()
    } catch (err) {
      if (refused(err)) return REFUSED
      throw this.classify(err)
    }
  }

  async evalOnce (sha, source, keys, args) {
    const call = (command, first) => withTimeout(this.run([command, first, String(keys.length), ...keys, ...args]), this.commandTimeoutMs)
    try {
      return await call('EVALSHA', sha)
    } catch (err) {
      if (!(err && typeof err.message === 'string' && err.message.startsWith('NOSCRIPT'))) throw this.classify(err)
    }
    try {
      return await call('EVAL', source)
    } catch (err) {
      throw this.classify(err)
    }
  }

  async blockingWait (key, seconds) {
    let conn
    try {
      conn = this.idle.pop() ?? await withTimeout(this.duplicate(), this.commandTimeoutMs)
    } catch (err) {
      throw this.classify(err)
    }
    const reply = conn.run(['BLPOP', key, seconds.toFixed(3)])
    let timer
    const timedOut = new Promise(resolve => { timer = setTimeout(() => resolve('timer'), seconds * 1000) })
    try {
      const first = await Promise.race([reply, timedOut])
      if (first !== 'timer') {
        this.giveBack(conn)
        return first !== null && first !== undefined
      }
    } catch (err) {
      conn.close().catch(() => {})
      throw this.classify(err)
    } finally {
      clearTimeout(timer)
    }
    // the local timer won: the connection is busy until Redis answers the BLPOP
    reply.then(() => this.giveBack(conn), () => conn.close().catch(() => {}))
    return false
  }

  // Resolves on a later turn of the event loop, after the clients' own scheduled writes
  // (node-redis writes on setImmediate): a seed calls it after handing a chunk over, so Redis
  // runs that chunk while the next one is normalized.
  yieldNow () {
    return new Promise(resolve => (typeof setImmediate === 'function' ? setImmediate(resolve) : setTimeout(resolve, 0)))
  }

  giveBack (conn) {
    if (this.closed || this.idle.length >= this.maxIdle) conn.close().catch(() => {})
    else this.idle.push(conn)
  }

  async close () {
    this.closed = true
    await Promise.allSettled(this.idle.splice(0).map(conn => conn.close()))
    await this.closeClient()
  }
}

module.exports = { checkUrl, ClientTransport, connectFailure, kindError, redactedUrl, unixSocket, urlError, useCore, withTimeout }
