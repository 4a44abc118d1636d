'use strict'
// crawlq as a Crawlee (JavaScript, 3.x) request manager: every crawler process that passes a
// CrawlqRequestManager as its `requestQueue` shares one frontier with the others, with crawlq
// workers in other languages and with Scrapy, Crawlee for Python and Laravel: requests are
// stored as the one crawl-request shape (docs/PROTOCOL.md section 10). Crawlee's own queue
// logic is replaced, not wrapped: a fetch is a crawlq lease, "handled" is an ack (or a dead
// letter for a failed request), a reclaim is a nack that stores the request's new retryCount,
// and politeness, identity, de-duplication and "is the crawl finished" are crawlq's.

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

// Error messages carry stacks and grow with every retry; the stored request keeps the last few.
const KEPT_ERRORS = 3
const KEPT_ERROR_CHARS = 1000

/**
 * A Crawlee request manager backed by a crawlq queue. Give it to any crawler as its
 * `requestQueue` (Crawlee 3.18's option check refuses the `requestManager` option); see the
 * section "Crawlee" of docs/frameworks.md.
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
   * @param {object} [options] {@link CrawlqRequestManager} options plus `queueOptions` and
   *   `leaseCrawls` (the named crawls it fetches from: an array of names, or one string of them
   *   separated by spaces; the queue option `leaseCrawls`, given here or in `queueOptions`, not
   *   both)
   */
  static async open (url, name, options = {}) {
    const { queueOptions = {}, leaseCrawls, ...rest } = options
    const { Queue, frameworkOptions } = require('./index.js')
    let chosen = queueOptions
    if (leaseCrawls != null) {
      if (queueOptions.leaseCrawls != null) {
        throw new TypeError('CrawlqRequestManager.open: leaseCrawls and queueOptions.leaseCrawls are both set: set one of them')
      }
      chosen = { ...queueOptions, leaseCrawls }
    }
    // leases in flight are extended by the queue's extender (the core's rule for adapters: a
    // third of the lease time unless given)
    const queue = await Queue.connect(url, name, frameworkOptions(chosen))
    return new CrawlqRequestManager(queue, { ...rest, ownsQueue: true })
  }

  /**
   * @param {import('./index').Queue} queue an open crawlq Queue (of this package or of the
   *   WebAssembly build); give it `extendEveryMs` to keep long requests' leases alive
   * @param {object} [options]
   * @param {number} [options.waitMs=1000] how long a fetch waits for a request (a host due
   *   after its politeness delay, a seed by another process) before it answers null
   * @param {number} [options.forefrontPriority=1] crawlq priority of `forefront` requests
   * @param {boolean} [options.releaseOnSignal=true] on SIGINT/SIGTERM release the leases this
   *   process holds, then send the signal again (the process ends as it would have without
   *   the manager). If you handle these signals yourself, pass false and await `close()`
   *   in your handler.
   * @param {number} [options.statsCacheMs=250] how long a stats reading answers
   *   `isEmpty`, `getPendingCount` and `getTotalCount`
   * @param {boolean} [options.linksWithAnswer=false] links added while this process holds
   *   pages are kept and sent with the next answer (an ack carrying them: one call per page
   *   instead of two); their `addedRequests` then say `wasAlreadyPresent: false` and
   *   `requestId: ''` (not known yet), and a URL crawlq refuses is a warning when sent
   * @param {number} [options.heldTurnMs=50] a request the crawler starts later than this
   *   after its lease (held for robots.txt) takes a turn of its host first (see
   *   `preNavigationHook`)
   * @param {string} [options.crawl] the named crawl the requests it seeds go into
   *   (docs/crawls.md: de-duplicated within it, its hosts shared with every other crawl);
   *   links sent with a page's answer go into the page's crawl; leases come from every crawl
   */
  constructor (queue, options = {}) {
    if (!queue || typeof queue.lease !== 'function' || typeof queue.seed !== 'function') {
      throw new TypeError('CrawlqRequestManager: the first argument must be an open crawlq Queue')
    }
    this.queue = queue
    this.waitMs = options.waitMs ?? 1000
    this.forefrontPriority = options.forefrontPriority ?? 1
    this.statsCacheMs = options.statsCacheMs ?? 250
    this.seedOptions = options.crawl == null ? undefined : { crawl: options.crawl }
    this.ownsQueue = Boolean(options.ownsQueue)
    // Leases this process holds, by request id (the crawlq item id), with the crawl request
    // each was read from (a retry stores it back, other frameworks' fields kept).
    this.inFlight = new Map()
    this.stats = null
    this.statsAt = 0
    this.closed = false
    /**
     * A Crawlee post-navigation hook for HTTP crawlers (CheerioCrawler, HttpCrawler,
     * JSDOMCrawler) and browser crawlers: `postNavigationHooks: [requestQueue.postNavigationHook]`.
     * It notes each response's status and Retry-After, so a 429 or 503 Crawlee retries is
     * answered as a rate limit (429) with the host's Retry-After (seconds or an HTTP-date):
     * the retry and every request to the host wait at least that long, across processes.
     */
    this.postNavigationHook = async ({ request, response }) => this.noteResponse(request, response)
    /**
     * A Crawlee pre-navigation hook for HTTP crawlers (CheerioCrawler, HttpCrawler,
     * JSDOMCrawler) and browser crawlers: `preNavigationHooks: [requestQueue.preNavigationHook]`.
     * A request that the crawler held for more than `heldTurnMs` since its lease (waiting for
     * the host's robots.txt with `respectRobotsTxtFile`: every request of a host leased during
     * that fetch would otherwise leave at once when it arrives) first waits for a turn of its
     * host (`Queue.waitHostTurn`), so the requests leave spaced by the host's delay. Each
     * redirect an HTTP client follows waits for a turn of its target's host too: spaced from
     * that host's leases and turns by its delay, across processes and frameworks, and held
     * while the host is at its in-flight limit (the request's own host excepted) or paused.
     * A request or hop that gets no turn within the crawler's navigation timeout fails (Crawlee
     * retries it as for any failed navigation).
     */
    this.preNavigationHook = async (context, gotOptions) => {
      await this.holdLateStart(context)
      this.holdRedirects(context, gotOptions)
    }
    this.heldTurnMs = options.heldTurnMs ?? 50
    this.linksWithAnswer = Boolean(options.linksWithAnswer)
    // links added while this process holds pages (linksWithAnswer): sent with the next answer
    this.links = []
    if (options.releaseOnSignal ?? true) this.watchSignals()
  }

  /** A request held since its lease (robots.txt) waits for its host's turn (preNavigationHook). */
  async holdLateStart ({ request, crawler }) {
    const held = request && this.inFlight.get(request.id)
    if (!held || Date.now() - held.handedAt <= this.heldTurnMs) return
    const timeoutMs = crawler?.navigationTimeoutMillis ?? 30000
    const taken = await this.queue.waitHostTurn(request.url, { lease: held.lease, timeoutMs })
    if (!taken) {
      throw new Error(`crawlq: no turn of the host of ${request.url} within ${timeoutMs} ms after the crawler held it ${Date.now() - held.handedAt} ms: it is paused or at its in-flight limit`)
    }
  }

  /** Make each redirect of a held request's fetch wait for its host's turn (preNavigationHook). */
  holdRedirects ({ request, crawler }, gotOptions) {
    const held = request && this.inFlight.get(request.id)
    if (!held || !gotOptions) return
    const timeoutMs = crawler?.navigationTimeoutMillis ?? 30000
    const beforeRedirect = async (options) => {
      const target = String(options.url)
      const taken = await this.queue.waitHostTurn(target, { lease: held.lease, timeoutMs })
      if (!taken) {
        throw new Error(`crawlq: no turn of the host of ${target} (redirected from ${request.url}) within ${timeoutMs} ms: it is paused or at its in-flight limit`)
      }
    }
    const hooks = gotOptions.hooks ?? {}
    gotOptions.hooks = { ...hooks, beforeRedirect: [...(hooks.beforeRedirect ?? []), beforeRedirect] }
  }

  /** Note the status and Retry-After of a held request's response (postNavigationHook). */
  noteResponse (request, response) {
    const held = request && this.inFlight.get(request.id)
    if (!held || !response) return
    // got's IncomingMessage (statusCode, headers) or a browser response (status(), headers())
    const status = typeof response.status === 'function' ? response.status() : response.statusCode
    const headers = (typeof response.headers === 'function' ? response.headers() : response.headers) ?? {}
    const retryAfter = headers['retry-after'] ?? headers['Retry-After']
    held.response = { status, retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter }
  }

  /** The crawlq lease a request came from (`leasedAt`, `attempt`, `token`, ...), if held. */
  leaseOf (request) {
    return this.inFlight.get(request.id)?.lease ?? null
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
    const items = built.map(request => ({ ...crawlRequestOf(request), priority }))
    if (this.linksWithAnswer && this.inFlight.size > 0 && items.length > 0) {
      // Found while this process holds pages: kept for the next answer (an ack that carries
      // them, one call per page). Every answer sends all that is kept, so what is kept belongs
      // to pages not answered yet: a crash loses nothing their next lease would not find again.
      this.links.push(...items)
      const addedRequests = built.map(request => ({ uniqueKey: request.uniqueKey, requestId: '', wasAlreadyPresent: false, wasAlreadyHandled: false }))
      return { addedRequests, waitForAllRequestsToBeAdded: Promise.resolve(addedRequests), requestsOverLimit }
    }
    const report = await this.queue.seedRequests(items, this.seedOptions)
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
    for (;;) {
      const [lease] = await this.queue.lease({ max: 1, waitMs: this.waitMs })
      if (!lease) return null
      let crawl, request
      try {
        crawl = codec().requestOf(lease)
        request = requestOf(lease, crawl)
      } catch (err) {
        // Not something Crawlee can fetch (a host item, a newer format): a dead letter, never
        // thrown at the crawler or held.
        await this.queue.nack(lease, { retry: false, reason: `undecodable: ${err.message}` })
        this.warn(`dead-lettered ${lease.url ?? lease.host}: not a crawl request Crawlee can fetch`, err)
        continue
      }
      this.inFlight.set(request.id, { lease, crawl, handedAt: Date.now() })
      return request
    }
  }

  /**
   * The request's end: an ack after success; after a failure Crawlee will not retry (or a
   * robots.txt skip) a dead letter with the last error as its reason.
   */
  async markRequestHandled (request) {
    const held = this.take(request)
    if (!held) return null
    const { RequestState } = core()
    if (request.state === RequestState.ERROR_HANDLER || request.state === RequestState.ERROR) {
      await this.sendLinks()
      await this.queue.nack(held.lease, { retry: false, reason: lastError(request) })
    } else if (request.state === RequestState.SKIPPED) {
      await this.sendLinks()
      await this.queue.nack(held.lease, { retry: false, reason: 'ignored: skipped by the crawler (robots.txt)' })
    } else {
      const links = this.takeLinks()
      if (links.length === 0) {
        await this.queue.ack(held.lease)
      } else {
        const { links: report } = await this.keptUnlessSent(links, () => this.queue.ackWithRequests(held.lease, links))
        this.warnRefused(report, links)
      }
    }
    this.stats = null
    return operationInfo(request)
  }

  /**
   * Give a request back. After a failure (Crawlee decided to retry) a nack: the attempt
   * counts, crawlq's backoff delays it and the stored request gets the new retryCount and
   * error messages (the other frameworks' fields kept). Otherwise (a delayed start) a
   * release: the attempt does not count.
   */
  async reclaimRequest (request, options = {}) {
    const held = this.take(request)
    if (!held) return null
    await this.sendLinks() // every answer sends the kept links
    const { RequestState } = core()
    const payload = codec().requestUpdate(held.lease, changesOf(request, held.crawl))
    if (request.state === RequestState.ERROR_HANDLER) {
      const outcome = await this.nackForRetry(held, { retry: true, reason: lastError(request), payload })
      if (outcome === 'dead') this.warn(`${request.url}: crawlq's maxAttempts reached before Crawlee's maxRequestRetries; dead-lettered`)
    } else {
      await this.queue.release(held.lease, { payload })
    }
    this.stats = null
    return { ...operationInfo(request), forefront: Boolean(options.forefront) }
  }

  /**
   * A nack for a retry; after a 429 or 503 (noted by postNavigationHook) a rate limit (429)
   * with the host's Retry-After (ignored when it is neither seconds nor an HTTP-date).
   */
  async nackForRetry (held, options) {
    const status = held.response?.status
    if (status !== 429 && status !== 503) return this.queue.nack(held.lease, options)
    const retryAfter = held.response.retryAfter
    return this.queue.nack(held.lease, {
      ...options,
      rateLimited: status === 429,
      retryAfterHeader: retryAfter === undefined || retryAfter === null ? null : String(retryAfter)
    })
  }

  /** The links kept for the next answer (linksWithAnswer), taken. */
  takeLinks () {
    const links = this.links
    this.links = []
    return links
  }

  /**
   * The call `send` of kept links taken out (`links`); if it fails they are kept again, ahead of
   * those found meanwhile, for the next answer: some belong to pages other calls answer, which
   * would lose them (sent again after a call that went in after all, they are duplicates).
   */
  async keptUnlessSent (links, send) {
    try {
      return await send()
    } catch (err) {
      this.links.unshift(...links)
      throw err
    }
  }

  /** Seed the kept links on their own (before an answer that is not an ack, or a close). */
  async sendLinks () {
    const links = this.takeLinks()
    if (links.length > 0) {
      this.warnRefused(await this.keptUnlessSent(links, () => this.queue.seedRequests(links, this.seedOptions)), links)
    }
  }

  warnRefused (report, links) {
    for (const bad of report.invalid) this.warn(`not queued: ${bad.code}: ${bad.reason} (${links[bad.index]?.url ?? bad.input})`)
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
    this.unwatchSignals()
    await this.sendLinks()
    await this.releaseHeld()
    if (this.ownsQueue) await this.queue.close()
  }

  async releaseHeld () {
    const held = [...this.inFlight.values()].map(h => h.lease)
    this.inFlight.clear()
    if (held.length) await this.queue.release(held)
    return held.length
  }

  take (request) {
    const held = this.inFlight.get(request.id)
    if (!held) {
      this.warn(`${request.url}: no crawlq lease held for request ${request.id}; nothing to answer`)
      return null
    }
    this.inFlight.delete(request.id)
    return held
  }

  watchSignals () {
    this.onSignal = signal => {
      if (this.signalled) return
      this.signalled = true
      this.closed = true
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

/**
 * The crawl request (docs/PROTOCOL.md section 10) a Crawlee request is seeded and stored as:
 * method, headers, body, userData (without `label` and `__crawlee`), label, depth, retries;
 * what only Crawlee understands under `frameworks.crawlee` (snake_case, shared with Crawlee for
 * Python); `kept`: the crawl request it was read from, whose other frameworks' fields are kept.
 */
function crawlRequestOf (request, kept = null) {
  const userData = JSON.parse(JSON.stringify(request.userData ?? {}))
  const crawleeData = userData.__crawlee ?? {}
  delete userData.__crawlee
  delete userData.label
  // the key Crawlee gave the request when it was seeded (a read request's uniqueKey is
  // crawlq's identity, so the seeder's own key is kept as it was)
  const crawlee = { unique_key: kept?.frameworks?.crawlee?.unique_key ?? request.uniqueKey }
  if (request.noRetry) crawlee.no_retry = true
  if (request.sessionRotationCount) crawlee.session_rotation_count = request.sessionRotationCount
  if (crawleeData.maxRetries !== undefined) crawlee.max_retries = crawleeData.maxRetries
  const errors = (request.errorMessages ?? []).slice(-KEPT_ERRORS).map(m => String(m).slice(0, KEPT_ERROR_CHARS))
  if (errors.length) crawlee.error_messages = errors
  const frameworks = { ...(kept?.frameworks ?? {}) }
  frameworks.crawlee = { ...(frameworks.crawlee ?? {}), ...crawlee }
  const headers = Object.entries(request.headers ?? {}).map(([name, value]) => [name, String(value)])
  return {
    url: request.url,
    method: request.method,
    headers,
    body: request.payload ?? null,
    userData,
    label: request.label ?? null,
    depth: request.crawlDepth ?? crawleeData.crawlDepth ?? 0,
    retries: request.retryCount ?? 0,
    foundOn: kept?.foundOn ?? null,
    frameworks
  }
}

/**
 * What a retry or release of a Crawlee request changes in its stored crawl request (the core
 * applies it to the request as stored: `requestUpdate`): the shared fields Crawlee may have
 * changed and its own namespace; the URL, the page it was found on and other frameworks'
 * fields stay as stored.
 */
function changesOf (request, kept) {
  const { url, foundOn, frameworks, ...changes } = crawlRequestOf(request, kept)
  return { ...changes, frameworks: { crawlee: frameworks.crawlee } }
}

/**
 * The Crawlee request of a lease and its crawl request. Its uniqueKey is the item's identity in
 * the frontier (the key of a non-GET, else the canonical URL), whatever Crawlee's own
 * computation would say, so every framework agrees on what one request is.
 */
function requestOf (lease, crawl) {
  const { Request } = core()
  const crawlee = crawl.frameworks.crawlee ?? {}
  const headers = {}
  for (const [name, value] of crawl.headers) headers[name] = name in headers ? `${headers[name]}, ${value}` : value
  const userData = { ...crawl.userData, __crawlee: { crawlDepth: crawl.depth } }
  if (crawl.label !== null) userData.label = crawl.label
  if (crawlee.max_retries !== undefined) userData.__crawlee.maxRetries = crawlee.max_retries
  // bytes come back as a Buffer from the addon, a Uint8Array from the WebAssembly build
  let payload = crawl.body ?? undefined
  if (payload instanceof Uint8Array && !Buffer.isBuffer(payload)) payload = Buffer.from(payload)
  const request = new Request({
    url: crawl.url,
    uniqueKey: lease.key ?? lease.url,
    id: lease.id,
    method: crawl.method,
    headers,
    payload,
    userData,
    retryCount: crawl.retries,
    noRetry: Boolean(crawlee.no_retry),
    errorMessages: crawlee.error_messages ?? []
  })
  // after construction: Crawlee's constructor sets it before the userData it lives in
  request.sessionRotationCount = crawlee.session_rotation_count ?? 0
  return request
}

/**
 * The core's crawl-request codec (requestOf, requestUpdate): pure conversions, the same for a
 * queue of this package and one of the WebAssembly build.
 */
function codec () {
  return require('./index.js')
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
