'use strict'
// crawlq as a Crawlee (JavaScript, 3.x) request manager: every crawler process that passes a
// CrawlqRequestManager as its `requestQueue` shares one frontier with the others and with
// crawlq workers in other languages. Crawlee's own queue logic is replaced, not wrapped: a
// fetch is a crawlq lease, "handled" is an ack (or a dead letter for a failed request), a
// reclaim is a nack that stores the request's new retryCount, and politeness, de-duplication
// and "is the crawl finished" are crawlq's, across processes.

let crawleeCore = null
function core () {
  // Crawlee is a peer dependency: loaded on first use, so `require('crawlq')` never needs it.
  if (crawleeCore === null) {
    try {
      crawleeCore = require('@crawlee/core')
    } catch (err) {
      const error = new Error('crawlq/crawlee needs Crawlee 3.x: npm install crawlee (or @crawlee/core)')
      error.cause = err
      throw error
    }
  }
  return crawleeCore
}

// The payload of an item seeded by this manager: the request's own fields, so any process
// can rebuild it. Items without this marker (seeded by a crawlq worker in another language)
// become a plain GET request whose userData is the item's payload.
const RECORD = 'crawlee'
// Error messages carry stacks and grow with every retry; the record keeps the last few.
const KEPT_ERRORS = 3
const KEPT_ERROR_CHARS = 1000

/**
 * A Crawlee request manager backed by a crawlq queue. Give it to any crawler as its
 * `requestQueue` (Crawlee 3.18's option check refuses the `requestManager` option); see the
 * README's "Use with Crawlee".
 *
 * @example
 * const { CheerioCrawler } = require('crawlee')
 * const { CrawlqRequestManager } = require('crawlq/crawlee')
 * const requestQueue = await CrawlqRequestManager.open('redis://127.0.0.1:6379', 'frontier',
 *   { queueOptions: { hostDelayMs: 1000 } })
 * const crawler = new CheerioCrawler({ requestQueue, async requestHandler ({ enqueueLinks }) { await enqueueLinks() } })
 * await crawler.run(['https://example.com/'])
 * await requestQueue.close()
 */
class CrawlqRequestManager {
  /**
   * Connect to Redis and open the queue `name`.
   * @param {string} url Redis URL
   * @param {string} name queue name
   * @param {object} [options] {@link CrawlqRequestManager} options plus `queueOptions`
   */
  static async open (url, name, options = {}) {
    const { queueOptions = {}, ...rest } = options
    // Crawlee retries a request up to maxRequestRetries (default 3) times: 4 deliveries.
    const { Queue } = require('./index.js')
    const queue = await Queue.connect(url, name, { maxAttempts: 4, ...queueOptions })
    return new CrawlqRequestManager(queue, { ...rest, ownsQueue: true })
  }

  /**
   * @param {import('./index').Queue} queue an open crawlq Queue (of this package or of the
   *   WebAssembly build)
   * @param {object} [options]
   * @param {number} [options.waitMs=1000] how long a fetch waits for a request (a host due
   *   after its politeness delay, a seed by another process) before it answers null
   * @param {number} [options.forefrontPriority=1] crawlq priority of `forefront` requests
   * @param {number} [options.extendEveryMs] how often leases in flight are extended
   *   (default: a third of the lease time; 0: never)
   * @param {number} [options.leaseTtlMs=120000] the lease time this manager extends to
   * @param {boolean} [options.releaseOnSignal=true] on SIGINT/SIGTERM release the leases this
   *   process holds, then send the signal again (the process ends as it would have without
   *   the manager). If you handle these signals yourself, pass false and await `close()`
   *   in your handler.
   * @param {number} [options.statsCacheMs=250] how long a stats reading answers
   *   `isEmpty`, `getPendingCount` and `getTotalCount`
   */
  constructor (queue, options = {}) {
    if (!queue || typeof queue.lease !== 'function' || typeof queue.seed !== 'function') {
      throw new TypeError('CrawlqRequestManager: the first argument must be an open crawlq Queue')
    }
    this.queue = queue
    this.waitMs = options.waitMs ?? 1000
    this.forefrontPriority = options.forefrontPriority ?? 1
    this.leaseTtlMs = options.leaseTtlMs ?? 120000
    this.statsCacheMs = options.statsCacheMs ?? 250
    this.ownsQueue = Boolean(options.ownsQueue)
    // Leases this process holds, by request id (the crawlq item id).
    this.inFlight = new Map()
    this.stats = null
    this.statsAt = 0
    this.closed = false
    const every = options.extendEveryMs ?? Math.floor(this.leaseTtlMs / 3)
    if (every > 0) {
      this.extender = setInterval(() => { this.extendInFlight().catch(err => this.warn('extending leases failed', err)) }, every)
      this.extender.unref()
    }
    if (options.releaseOnSignal ?? true) this.watchSignals()
  }

  /** The crawlq lease a request came from (`leasedAt`, `attempt`, `token`, ...), if held. */
  leaseOf (request) {
    return this.inFlight.get(request.id) ?? null
  }

  async addRequest (requestLike, options = {}) {
    const { addedRequests } = await this.addRequestsBatched([requestLike], options)
    const added = addedRequests[0]
    if (!added) throw new Error(`crawlq: the request was not queued: ${describe(requestLike)}`)
    return { ...added, forefront: Boolean(options.forefront) }
  }

  /**
   * Seed requests in one call (crawlq splits large batches itself). A request whose
   * uniqueKey was ever seen is `wasAlreadyPresent` (its id is not looked up: requestId '').
   * An invalid URL is skipped with a warning; the others are queued.
   */
  async addRequestsBatched (requests, options = {}) {
    const { Request } = core()
    let sources = []
    for await (const source of requests) sources.push(source)
    let requestsOverLimit
    if (options.maxNewRequests !== undefined && sources.length > options.maxNewRequests) {
      requestsOverLimit = sources.slice(options.maxNewRequests)
      sources = sources.slice(0, options.maxNewRequests)
    }
    const built = sources.map(source => source instanceof Request ? source : new Request(typeof source === 'string' ? { url: source } : source))
    const priority = options.forefront ? this.forefrontPriority : 0
    const report = await this.queue.seed(built.map(request => ({
      url: request.url,
      key: request.uniqueKey,
      priority,
      payload: recordOf(request)
    })))
    const invalid = new Map(report.invalid.map(i => [i.index, i]))
    const addedRequests = []
    built.forEach((request, index) => {
      const bad = invalid.get(index)
      if (bad) {
        this.warn(`not queued: ${bad.code}: ${bad.reason} (${bad.input})`)
        return
      }
      const id = report.ids[index]
      addedRequests.push({ uniqueKey: request.uniqueKey, requestId: id ?? '', wasAlreadyPresent: id === null, wasAlreadyHandled: false })
    })
    this.stats = null
    return { addedRequests, waitForAllRequestsToBeAdded: Promise.resolve(addedRequests), requestsOverLimit }
  }

  /**
   * Lease one request, waiting up to `waitMs` for a host to come due; null when none did.
   */
  async fetchNextRequest () {
    if (this.closed) return null
    const [lease] = await this.queue.lease({ max: 1, waitMs: this.waitMs, ttlMs: this.leaseTtlMs })
    if (!lease) return null
    let request
    try {
      request = requestOf(lease)
    } catch (err) {
      // Not something Crawlee can fetch (a host item, a payload it refuses): say why, once.
      await this.queue.nack(lease, { retry: false, reason: `not a Crawlee request: ${err.message}` })
      this.warn(`dead-lettered ${lease.url ?? lease.host}: not a Crawlee request`, err)
      return null
    }
    this.inFlight.set(request.id, lease)
    return request
  }

  /**
   * The request's end: an ack after success; after a failure Crawlee will not retry (or a
   * robots.txt skip) a dead letter with the last error as its reason.
   */
  async markRequestHandled (request) {
    const lease = this.take(request)
    if (!lease) return null
    const { RequestState } = core()
    if (request.state === RequestState.ERROR_HANDLER || request.state === RequestState.ERROR) {
      await this.queue.nack(lease, { retry: false, reason: lastError(request), payload: recordOf(request) })
    } else if (request.state === RequestState.SKIPPED) {
      await this.queue.nack(lease, { retry: false, reason: 'ignored: skipped by the crawler (robots.txt)' })
    } else {
      await this.queue.ack(lease)
    }
    this.stats = null
    return operationInfo(request)
  }

  /**
   * Give a request back. After a failure (Crawlee decided to retry) a nack: the attempt
   * counts, crawlq's backoff delays it and the stored request gets the new retryCount and
   * error messages. Otherwise (a delayed start) a release: the attempt does not count.
   */
  async reclaimRequest (request, options = {}) {
    const lease = this.take(request)
    if (!lease) return null
    const { RequestState } = core()
    const record = recordOf(request)
    if (request.state === RequestState.ERROR_HANDLER) {
      const outcome = await this.queue.nack(lease, { retry: true, reason: lastError(request), payload: record })
      if (outcome === 'dead') this.warn(`${request.url}: crawlq's maxAttempts reached before Crawlee's maxRequestRetries; dead-lettered`)
    } else {
      await this.queue.release(lease, { payload: record })
    }
    this.stats = null
    return { ...operationInfo(request), forefront: Boolean(options.forefront) }
  }

  /** True when nothing is queued or leased by any process: the crawl is over. */
  async isFinished () {
    return this.queue.isFinished()
  }

  /** True when nothing is queued (leases held elsewhere may still seed more). */
  async isEmpty () {
    const stats = await this.readStats()
    return stats.pending === 0
  }

  /** Requests done or dead-lettered, by every process. */
  async handledCount () {
    const stats = await this.readStats(true)
    return stats.done + stats.dead
  }

  /** Requests ever queued (offline: the last stats reading). */
  getTotalCount () {
    const s = this.stats
    return s ? s.pending + s.leased + s.done + s.dead : 0
  }

  /** Requests queued or leased (offline: the last stats reading). */
  getPendingCount () {
    const s = this.stats
    return s ? s.pending + s.leased : this.inFlight.size
  }

  async * [Symbol.asyncIterator] () {
    for (;;) {
      const request = await this.fetchNextRequest()
      if (request) yield request
      else if (this.closed || await this.isFinished()) return
    }
  }

  /**
   * Stop extending leases and release the ones this process still holds (another process
   * takes them at once); closes the queue when the manager opened it.
   */
  async close () {
    if (this.closed) return
    this.closed = true
    clearInterval(this.extender)
    this.unwatchSignals()
    await this.releaseHeld()
    if (this.ownsQueue) await this.queue.close()
  }

  async releaseHeld () {
    const held = [...this.inFlight.values()]
    this.inFlight.clear()
    if (held.length) await this.queue.release(held)
    return held.length
  }

  async extendInFlight () {
    const held = [...this.inFlight.entries()]
    if (!held.length) return
    const until = await this.queue.extend(held.map(([, lease]) => lease), this.leaseTtlMs)
    until.forEach((expiresAt, i) => {
      const [id, lease] = held[i]
      if (expiresAt === null) {
        // Expired and taken back (or answered meanwhile): stop extending it; its answer will
        // find the lease lost and change nothing.
        if (this.inFlight.get(id) === lease) this.warn(`lease of ${lease.url} was lost (expired before it was extended)`)
      } else {
        lease.expiresAt = expiresAt
      }
    })
  }

  take (request) {
    const lease = this.inFlight.get(request.id)
    if (!lease) {
      this.warn(`${request.url}: no crawlq lease held for request ${request.id}; nothing to answer`)
      return null
    }
    this.inFlight.delete(request.id)
    return lease
  }

  watchSignals () {
    this.onSignal = signal => {
      if (this.signalled) return
      this.signalled = true
      this.closed = true
      clearInterval(this.extender)
      // Stay subscribed until the release is done: exit hooks such as signal-exit end the
      // process at once when they find themselves the only listener left.
      const resend = () => {
        this.unwatchSignals()
        process.kill(process.pid, signal)
      }
      this.releaseHeld().then(resend, err => { this.warn('releasing held leases failed', err); resend() })
    }
    process.on('SIGINT', this.onSignal)
    process.on('SIGTERM', this.onSignal)
  }

  unwatchSignals () {
    if (!this.onSignal) return
    process.removeListener('SIGINT', this.onSignal)
    process.removeListener('SIGTERM', this.onSignal)
    this.onSignal = null
  }

  async readStats (fresh = false) {
    if (fresh || !this.stats || Date.now() - this.statsAt > this.statsCacheMs) {
      this.stats = await this.queue.stats()
      this.statsAt = Date.now()
    }
    return this.stats
  }

  warn (message, err) {
    const { log } = core()
    log.warning(`crawlq: ${message}${err ? `: ${err.message}` : ''}`)
  }
}

/** The JSON a request is stored as: everything needed to rebuild it elsewhere. */
function recordOf (request) {
  const userData = JSON.parse(JSON.stringify(request.userData ?? {}))
  if (userData.__crawlee) delete userData.__crawlee.state
  const record = {
    [RECORD]: 1,
    url: request.url,
    uniqueKey: request.uniqueKey,
    method: request.method,
    retryCount: request.retryCount,
    userData
  }
  // A body in bytes is stored as bytes (crawlq payloads hold byte strings), a string as it is.
  if (request.payload !== undefined) record.payload = request.payload
  if (request.noRetry) record.noRetry = true
  if (request.headers && Object.keys(request.headers).length) record.headers = request.headers
  if (request.sessionRotationCount) record.sessionRotationCount = request.sessionRotationCount
  const errors = (request.errorMessages ?? []).slice(-KEPT_ERRORS).map(m => String(m).slice(0, KEPT_ERROR_CHARS))
  if (errors.length) record.errorMessages = errors
  return record
}

/** Rebuild a request from a lease: its record, or a plain GET for an item from elsewhere. */
function requestOf (lease) {
  const { Request } = core()
  const payload = lease.payload
  if (payload && typeof payload === 'object' && payload[RECORD] === 1) {
    const { [RECORD]: _, ...options } = payload
    // bytes come back as a Buffer from the addon, a Uint8Array from the WebAssembly build
    if (options.payload instanceof Uint8Array && !Buffer.isBuffer(options.payload)) options.payload = Buffer.from(options.payload)
    return new Request({ ...options, id: lease.id })
  }
  if (!lease.url) throw new Error(`host item ${lease.host} has no URL`)
  const userData = payload && typeof payload === 'object' && !Array.isArray(payload) ? payload : {}
  return new Request({ url: lease.url, uniqueKey: lease.key ?? lease.url, id: lease.id, userData })
}

function lastError (request) {
  const messages = request.errorMessages ?? []
  const last = messages.length ? String(messages[messages.length - 1]) : 'failed'
  // Crawlee keeps the error's stack: its first line is "<ErrorClass>: <message>".
  return last.split('\n')[0].replace(/^[A-Za-z]*Error: /, '').slice(0, 500)
}

function operationInfo (request) {
  return { requestId: request.id, uniqueKey: request.uniqueKey, wasAlreadyPresent: true, wasAlreadyHandled: false }
}

function describe (source) {
  return typeof source === 'string' ? source : (source && source.url) || String(source)
}

module.exports = { CrawlqRequestManager }
