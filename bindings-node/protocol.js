'use strict'
// The parts of the JavaScript protocols a Queue class cannot declare from Rust: a `Work`
// iterator is async-iterable, `work({ signal })` stops (releasing what it holds) when the
// signal aborts, a leasing call's `signal` ends its wait and rejects with the abort's reason,
// and with `extendEveryMs` a timer on the event loop extends the leases the queue holds (as
// BullMQ renews its locks: a blocked event loop stops extending, and the leases expire for
// another worker to take), a long call's `onProgress` (a deletion's, a seed's) is called with
// its reports (the call waiting for it), and a call that takes a list takes any iterable.
// Shared by the native addon and the WebAssembly build.

const extenders = new WeakMap()

/** Start the queue's extension timer on its first lease (every way of making a queue leases). */
function startExtending (queue) {
  const every = queue.extendEveryMs
  if (!(every > 0) || extenders.has(queue)) return
  const timer = setInterval(() => {
    queue.extendHeld().catch(err => {
      // Retried at the next tick; a lease that expires meanwhile is reported lost by its answer.
      globalThis.process?.emitWarning?.(`crawlq: extending held leases failed: ${err.message}`, { code: err.code })
    })
  }, every)
  timer.unref?.()
  extenders.set(queue, timer)
}

function stopExtending (queue) {
  const timer = extenders.get(queue)
  if (timer !== undefined) {
    clearInterval(timer)
    extenders.delete(queue)
  }
}

function checkSignal (signal) {
  if (signal !== undefined && (signal === null || typeof signal !== 'object' || typeof signal.addEventListener !== 'function')) {
    const err = new TypeError('options.signal must be an AbortSignal')
    err.code = 'ERR_INVALID_ARG_TYPE'
    throw err
  }
}

// The leasing calls that take `signal` in their options, and which argument the options are.
const ABORTABLE = { lease: 0, ackAndLease: 1, ackWithLinksAndLease: 2, ackWithRequestsAndLease: 2 }

/**
 * `method` taking `signal` (an AbortSignal) in its options: an abort ends the call's wait at
 * once and the call rejects with `signal.reason`. The call stops at its wait, never while one
 * of its scripts runs in Redis: what it answered (acks, links) stands, and leases a script under
 * way took are released before the rejection.
 */
function abortable (method, at) {
  return function (...args) {
    const options = args[at]
    if (options === null || typeof options !== 'object' || !('signal' in options)) return method.apply(this, args)
    const { signal, ...rest } = options
    try {
      checkSignal(signal)
    } catch (err) {
      return Promise.reject(err)
    }
    args[at] = rest
    if (signal === undefined) return method.apply(this, args)
    if (signal.aborted) return Promise.reject(signal.reason)
    const listening = this._armNextCall()
    const onAbort = () => listening.stop()
    signal.addEventListener('abort', onAbort, { once: true })
    return method.apply(this, args).then(async reply => {
      signal.removeEventListener('abort', onAbort)
      if (!signal.aborted) return reply
      const leases = Array.isArray(reply) ? reply : reply.leases
      if (leases.length > 0) await this.release(leases)
      throw signal.reason
    }, err => {
      signal.removeEventListener('abort', onAbort)
      throw err
    })
  }
}

// The long calls that take `onProgress` in their options, and which argument the options are.
const REPORTING = { deleteCrawl: 1, deleteHost: 1, removeQueue: 0, seed: 1, seedRequests: 1 }

/**
 * `method` taking `onProgress` (a function) in its options: it is called after each bounded
 * step with the totals so far, and the call waits for it (and for the promise it returns)
 * before its next step. If it throws (or its promise rejects), the call stops right after that
 * step and rejects with that error.
 */
function reporting (method, at) {
  return function (...args) {
    const options = args[at]
    if (options === null || typeof options !== 'object' || !('onProgress' in options)) return method.apply(this, args)
    const { onProgress, ...rest } = options
    args[at] = rest
    if (onProgress === undefined) return method.apply(this, args)
    if (typeof onProgress !== 'function') {
      const err = new TypeError('options.onProgress must be a function')
      err.code = 'ERR_INVALID_ARG_TYPE'
      return Promise.reject(err)
    }
    const feed = this._armNextProgress()
    const call = method.apply(this, args)
    let failed = null
    const reports = (async () => {
      for (let report = await feed.next(); report !== null; report = await feed.next()) {
        try {
          await onProgress(report)
        } catch (err) {
          failed = { err }
          feed.stop()
          return
        }
      }
    })()
    return Promise.all([call, reports]).then(([reply]) => {
      if (failed !== null) throw failed.err
      return reply
    })
  }
}

// The calls that take a list (of items, links or crawl requests), and which argument it is.
const LISTS = { seed: 0, seedRequests: 0, ackWithLinks: 1, ackWithRequests: 1, ackWithLinksAndLease: 1, ackWithRequestsAndLease: 1 }

/**
 * `method` taking any iterable where it takes an array (a Set, a generator, a Map's `values()`):
 * read as an array, in order, before anything is sent (an iterator that throws rejects the
 * call, nothing sent). A string stays one item, and anything else goes on to the method's own
 * checks.
 */
function listed (method, at) {
  return function (...args) {
    const list = args[at]
    if (list !== null && typeof list === 'object' && !Array.isArray(list) && typeof list[Symbol.iterator] === 'function') {
      try {
        args[at] = Array.from(list)
      } catch (err) {
        return Promise.reject(err)
      }
    }
    return method.apply(this, args)
  }
}

function installProtocols (Queue, Work) {
  // reporting inside listed: an iterable is read (and may throw) before a progress feed is armed
  for (const [name, at] of Object.entries(REPORTING)) {
    Queue.prototype[name] = reporting(Queue.prototype[name], at)
  }
  for (const [name, at] of Object.entries(LISTS)) {
    Queue.prototype[name] = listed(Queue.prototype[name], at)
  }
  for (const [name, at] of Object.entries(ABORTABLE)) {
    Queue.prototype[name] = abortable(Queue.prototype[name], at)
  }
  const lease = Queue.prototype.lease
  Queue.prototype.lease = function (options) {
    startExtending(this)
    return lease.call(this, options)
  }
  const close = Queue.prototype.close
  Queue.prototype.close = function () {
    stopExtending(this)
    return close.call(this)
  }
  const work = Queue.prototype.work
  Queue.prototype.work = function (options) {
    startExtending(this)
    const { signal, ...rest } = options ?? {}
    checkSignal(signal)
    const iterator = work.call(this, rest)
    if (signal) {
      const stop = () => { iterator.close().catch(() => {}) }
      if (signal.aborted) stop()
      else signal.addEventListener('abort', stop, { once: true })
    }
    return iterator
  }
  Work.prototype[Symbol.asyncIterator] = function () {
    return this
  }
}

// What the package exports besides its adapters, the same in the native addon and the
// WebAssembly build. (Each package's entries spell them out one by one, so Node.js sees them as
// named exports of a CommonJS module; test/queue.test.js checks them against this list.)
const API_NAMES = ['Queue', 'Work', 'normalize', 'shardOf', 'requestOf', 'requestPayload',
  'requestUpdate', 'defaultOptions', 'frameworkOptions', 'redactedUrl']

module.exports = { installProtocols, API_NAMES }
