// Types of `crawlq/crawlee`: crawlq as a Crawlee 3.x request manager.
import type { IRequestManager, Request, RequestOptions, RequestQueueOperationInfo, RequestQueueOperationOptions, AddRequestsBatchedOptions, AddRequestsBatchedResult, RequestsLike, Source } from '@crawlee/core'
import type { Lease, Queue, QueueOptions } from './index'

export interface CrawlqRequestManagerOptions {
  /** How long a fetch waits for a request (a host coming due, a seed by another process) before it answers null (default 1000). */
  waitMs?: number
  /** crawlq priority given to `forefront` requests (default 1; others get 0). */
  forefrontPriority?: number
  /**
   * On SIGINT/SIGTERM, release the leases this process holds, then send the signal again so the
   * process ends as it would have (default true). Handling these signals yourself? Pass false
   * and await `close()` in your handler.
   */
  releaseOnSignal?: boolean
  /** How long one stats reading answers isEmpty, getPendingCount and getTotalCount (default 250). */
  statsCacheMs?: number
  /**
   * A request the crawler starts more than this many ms after its lease (held while the
   * crawler fetched the host's robots.txt) first takes a turn of its host (default 50; see
   * `preNavigationHook`).
   */
  heldTurnMs?: number
  /**
   * Keep the links added while this process holds pages and send them with the next answer (an
   * ack carrying them: one call per page instead of two). Their `addedRequests` then say
   * `wasAlreadyPresent: false` and `requestId: ''` (not known yet); a URL crawlq refuses is a
   * warning when they are sent. Default false.
   */
  linksWithAnswer?: boolean
  /**
   * The named crawl the requests it seeds go into (docs/crawls.md: de-duplicated within it, its
   * hosts shared with every other crawl of the queue). Links sent with a page's answer go into
   * the page's crawl; leases come from every crawl. Default: none (the default crawl).
   */
  crawl?: string
}

export interface CrawlqRequestManagerOpenOptions extends CrawlqRequestManagerOptions {
  /**
   * Options of the queue the manager opens. Its leases in flight are extended every third of its
   * lease time (`extendEveryMs`) unless given; `maxAttempts` is the queue's (the lower of it and
   * Crawlee's `maxRequestRetries` + 1 wins).
   */
  queueOptions?: QueueOptions
  /**
   * The named crawls the manager fetches from (the queue option `leaseCrawls`: an array of
   * names, or one string of them separated by spaces; not both here and in `queueOptions`).
   * Default: every crawl.
   */
  leaseCrawls?: string | string[]
}

/**
 * A Crawlee request manager on a crawlq queue: every crawler process (and crawlq workers and
 * crawlers of other frameworks) shares one frontier of crawl requests (docs/PROTOCOL.md section
 * 10), with crawlq's identity (the canonical URL of a GET, else method, URL and body: a leased
 * request's `uniqueKey` is it), per-host politeness and "finished" across processes.
 *
 * ```js
 * const { CheerioCrawler } = require('crawlee')
 * const { CrawlqRequestManager } = require('crawlq/crawlee')
 * const manager = await CrawlqRequestManager.open('redis://127.0.0.1:6379/0', 'site', { queueOptions: { hostDelayMs: 1000 } })
 * const crawler = new CheerioCrawler({ requestQueue: manager, async requestHandler ({ enqueueLinks }) { await enqueueLinks() } })
 * await crawler.run(['https://example.com/'])
 * await manager.close()
 * ```
 */
export declare class CrawlqRequestManager implements IRequestManager {
  /** Connect to Redis at `url` and open the queue `name`. */
  static open (url: string, name: string, options?: CrawlqRequestManagerOpenOptions): Promise<CrawlqRequestManager>
  constructor (queue: Queue, options?: CrawlqRequestManagerOptions)
  readonly queue: Queue
  /**
   * A post-navigation hook (`postNavigationHooks: [manager.postNavigationHook]`) that notes
   * each response's status and Retry-After: a 429 or 503 that Crawlee retries is then a rate
   * limit (429) holding the retry and the host at least its Retry-After, across processes.
   */
  readonly postNavigationHook: (context: { request: Request, response?: unknown }) => Promise<void>
  /**
   * A pre-navigation hook (`preNavigationHooks: [manager.preNavigationHook]`): a request the
   * crawler held more than `heldTurnMs` since its lease (for robots.txt with
   * `respectRobotsTxtFile`) waits for a turn of its host first, and each redirect an HTTP
   * client follows waits for a turn of its target's host (`Queue.waitHostTurn`): spaced by the
   * host's delay from its leases and turns, across processes; a request or hop without a turn
   * within the navigation timeout fails.
   */
  readonly preNavigationHook: (context: { request: Request, crawler?: unknown }, gotOptions?: Record<string, unknown>) => Promise<void>
  /** The crawlq lease a fetched request came from, while this process holds it. */
  leaseOf (request: Request): Lease | null
  addRequest (requestLike: Source, options?: RequestQueueOperationOptions): Promise<RequestQueueOperationInfo>
  addRequestsBatched (requests: RequestsLike, options?: AddRequestsBatchedOptions): Promise<AddRequestsBatchedResult>
  fetchNextRequest<T extends Record<string, any> = Record<string, any>> (): Promise<Request<T> | null>
  markRequestHandled (request: Request): Promise<RequestQueueOperationInfo | null>
  reclaimRequest (request: Request, options?: RequestQueueOperationOptions): Promise<RequestQueueOperationInfo | null>
  isFinished (): Promise<boolean>
  isEmpty (): Promise<boolean>
  handledCount (): Promise<number>
  getTotalCount (): number
  getPendingCount (): number
  [Symbol.asyncIterator] (): AsyncGenerator<Request>
  /** Stop extending leases, release the ones still held; closes the queue if `open` made it. */
  close (): Promise<void>
}

export type { RequestOptions }
