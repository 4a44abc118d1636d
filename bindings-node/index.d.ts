/* crawlq: a Redis-backed crawl frontier shared by Node.js, Python, PHP and Rust workers.
 *
 * The interfaces below describe the plain objects the API takes and returns; the classes
 * after them are generated from the Rust binding. Durations are milliseconds (`...Ms`),
 * timestamps are milliseconds since the epoch by the Redis server's clock.
 */

/**
 * A payload value: JSON, and byte strings as `Uint8Array` (stored as `{"$bytes": base64}`, read
 * back as a `Buffer` from the native addon and a `Uint8Array` from the WebAssembly build).
 */
export type Json = null | boolean | number | string | Uint8Array | Json[] | { [key: string]: Json }

/** Options of `Queue.connect`; an unknown name rejects with `ERR_CRAWLQ_CONFIG`. */
export interface QueueOptions {
  /** How long a lease lasts before it may be reclaimed (default 120000). */
  leaseTtlMs?: number
  /** Deliveries before an item goes to dead letters (default 3). */
  maxAttempts?: number
  /** Retry delay policy (default `'exponential'`). */
  backoff?: 'fixed' | 'exponential'
  backoffBaseMs?: number
  backoffMaxMs?: number
  /** Fraction of a retry delay taken off at random, 0..1 (default 0.1). */
  backoffJitter?: number
  /** Default politeness delay between two leases of one host (default 0). */
  hostDelayMs?: number
  /** Default in-flight limit per host: the most items of one host leased at once across every worker (default 0: none). A host's own limit (`setHostInFlight`) comes first. */
  hostInFlight?: number
  /** When a host's delay is counted from: the previous lease (default) or the previous item's answer (ack, nack, release, expiry; one item in flight unless the in-flight limit allows more). A host's own mode (`setHostDelayAfter`) comes first. */
  hostDelayAfter?: 'lease' | 'answer'
  /** After the answer, wait this many times how long the answered item was leased when longer than the delay (default 0: the delay alone; 0..=1000), as Heritrix's delay-factor. */
  hostDelayFactor?: number
  /** The longest wait the delay factor gives (default 30 000; 0: no cap); never shortens a host's delay. */
  hostDelayMaxMs?: number
  /** The longest host delay a robots.txt Crawl-delay sets (`setHostCrawlDelay`; default 300 000). */
  crawlDelayMaxMs?: number
  /** Politeness key: the host (default) or its registrable domain. */
  hostKey?: 'host' | 'domain'
  /** Prefix of every Redis key (default `'crawlq'`). */
  keyPrefix?: string
  connectTimeoutMs?: number
  commandTimeoutMs?: number
  /** Largest serialized payload per item (default 16384). */
  maxPayloadBytes?: number
  /** Items per seed round trip (default 1000). */
  seedBatch?: number
  /**
   * Fingerprints of URLs Redis confirmed seen that this client keeps, so a seed of one of them
   * is answered "duplicate" without reaching Redis (default 0: no cache; at most that many, all
   * shards of the queue together; exact: dropped when the queue's seen set may have shrunk, or
   * the server restarted or was replaced by a replica). An entry costs the process about 20-30
   * bytes (100,000 entries: about 2 MB). With the cache on, the client also keeps the canonical
   * forms of up to 8,192 absolute links it met (about 2.5 MiB when full), so a link met again is
   * not parsed again.
   */
  seenCache?: number
  /**
   * How long a page's answer (`ackWithLinksAndLease` and the other page answers) may wait for
   * the answers this client's other workers are about to send, so that they go to Redis in one
   * call (default 0: at once, unless a call of the queue is on its way; at most 1000). Pages
   * that come back from their fetches one by one otherwise each go alone, and most of what a
   * call costs Redis is paid once per call.
   */
  answerLingerMs?: number
  /** Expired leases reclaimed at most per lease call (default 100). */
  reclaimBatch?: number
  adaptiveDelayStepMs?: number
  adaptiveDelayMaxMs?: number
  /**
   * The longest a server's Retry-After (`nack`'s `retryAfter`) holds its host and the retry
   * (default 1 day; 0: no cap); a longer one is taken as this.
   */
  retryAfterMaxMs?: number
  /** PEM file of the CA of a `rediss://` server with a private CA. */
  tlsCaFile?: string
  /** After each change, wait until this many replicas have it (Redis WAIT); default 0. */
  minReplicas?: number
  /** How long a change waits for `minReplicas` (default 1000). */
  replicaTimeoutMs?: number
  /** The named crawls this worker leases from: a list of names, or one string of them separated by spaces (default: every crawl). */
  leaseCrawls?: string | string[]
  /** Shards of a new queue, 1..1024, split by host (default: the queue's own, 1 for a new one). */
  shards?: number
  /**
   * Extend the leases this queue handed out and that are not answered yet every this many ms,
   * from a timer on the event loop (default 0: never). Shorter than every lease time; a third of
   * `leaseTtlMs` is a good choice. `close()` stops it.
   */
  extendEveryMs?: number
  /** After an ack, queue the URL again this many ms later (default 0: never); the ack option revisitAfterMs chooses per call. */
  revisitAfterMs?: number
  /** Sort each URL's query parameters before it is compared and stored (default false): `?a=1&b=2` and `?b=2&a=1` are one item. Every worker of a queue must agree. */
  sortQuery?: boolean
  /** Open the queue on a server that may evict any key when its memory is full (an `allkeys-*` maxmemory-policy with a maxmemory set; default false: the queue's first call refuses such a server with a CONFIG error, as it could drop queued URLs without a trace). */
  allowEviction?: boolean
  /** Test only: a fixed clock (ms since the epoch) instead of the server's. */
  fixedClock?: number
}

/** One item to seed, with per-item overrides of the batch's `SeedOptions`. */
export interface SeedItem {
  url?: string
  host?: string
  priority?: number
  delayMs?: number
  payload?: Json
  force?: boolean
  /** The item's identity for de-duplication instead of its canonical URL (1..2048 bytes, no control characters). */
  key?: string
}

export interface SeedOptions {
  /** Higher is leased first, -32768..32767 (default 0). */
  priority?: number
  /** Not leasable before this many ms (default 0). */
  delayMs?: number
  /** Stored with every item of the batch that has none of its own. */
  payload?: Json
  /** Queue even if seen before (default false). */
  force?: boolean
  /**
   * The named crawl to seed into (default: none, the default crawl). De-duplication is per
   * crawl; hosts are shared by every crawl, and crawls are leased from in turn. 1..64 bytes of
   * printable ASCII other than `"`, `\`, `{`, `}` and `:`.
   */
  crawl?: string
}

/** How far a seed call is, after one of its round trips (`onProgress`). */
export interface SeedProgress {
  /** Items handled so far (seeded, found duplicate or refused), of `total`. */
  done: number
  total: number
  added: number
  duplicates: number
  /** Items refused so far (the report lists them). */
  invalid: number
}

/**
 * A seed call's options: `onProgress` is called after each round trip with how far the seed
 * is, and the seed waits for it (and for its promise); if it throws, the seed stops there and
 * rejects with that error (what was sent is seeded: seeding the batch again is safe).
 */
export type SeedCallOptions = SeedOptions & { onProgress?: (soFar: SeedProgress) => unknown }

/**
 * The options of a batch of crawl requests (`seedRequests`, `ackWithRequests`): the seed
 * options but `payload`, since a request's payload is the request itself (its own data goes in
 * its `userData`); the option is refused as unknown.
 */
export type RequestOptions = Omit<SeedOptions, 'payload'>

export interface InvalidInput {
  /** Position in the seeded batch. */
  index: number
  input: string
  /** Stable reason code: `invalid_url`, `invalid_host`, `payload_too_large`, ... */
  code: string
  reason: string
}

export interface SeedReport {
  added: number
  duplicates: number
  invalid: InvalidInput[]
  /** One entry per item, in order: the id it was queued under (its lease's `id`), or null for a duplicate or an invalid item. */
  ids: (string | null)[]
}

export interface LeaseOptions {
  /** Most items returned, 1..10000 (default 1). */
  max?: number
  /** How long to wait when nothing is ready (default 5000). */
  waitMs?: number
  /** Lease time of these leases (default: the queue's `leaseTtlMs`). */
  ttlMs?: number
  /**
   * Ends the call's wait when it aborts: the call rejects with `signal.reason` and leases
   * nothing. It stops at its wait, never while one of its scripts runs in Redis: what it
   * answered (acks, links) stands, and leases a script under way took are released first.
   */
  signal?: AbortSignal
}

export interface WorkOptions extends LeaseOptions {
  /** Finish when a lease call waited `waitMs` and got nothing (default false: wait on). */
  stopWhenEmpty?: boolean
  /** Stops the iteration and releases what it holds. */
  signal?: AbortSignal
}

/** A leased item. Pass it back to `ack`, `nack`, `extend` or `release`. */
export interface Lease {
  id: string
  /** The canonical URL, or `null` for a host item. */
  url: string | null
  /** The host key the item is scheduled under. */
  host: string
  /** The de-duplication key the item was seeded with, or `null`. */
  key: string | null
  payload: Json
  priority: number
  /** 1 on the first delivery, 2 on the first retry, ... */
  attempt: number
  /** Fencing token of this lease. */
  token: number
  leasedAt: number
  expiresAt: number
  enqueuedAt: number
  /** Why the previous attempt failed, if one did. */
  lastError: string | null
  /** The named crawl the item was seeded into, or `null` (the default crawl). */
  crawl: string | null
}

/**
 * A crawl request in the one shape every framework adapter reads and writes
 * (docs/PROTOCOL.md section 10), as `requestOf` returns it.
 */
export interface CrawlRequest {
  /** The URL to fetch: the item's canonical URL. */
  url: string
  /** Upper case; `GET` unless the request says otherwise. */
  method: string
  /** In order, a name repeated for each of its values. */
  headers: Array<[string, string]>
  /** The body's bytes (a `Buffer`; a `Uint8Array` from the WebAssembly build), or `null`. */
  body: Buffer | Uint8Array | null
  /** Free JSON from the page that found the request to its handler (Crawlee's `userData`). */
  userData: Record<string, Json>
  /** The handler the request is routed to. */
  label: string | null
  /** Links followed from a start URL (0 for a start URL). */
  depth: number
  /** Times a crawler retried it (Crawlee's `retryCount`); crawlq's `attempt` counts deliveries. */
  retries: number
  /** The page it was found on, if known. */
  foundOn: string | null
  /** What only one framework understands, under its name (`scrapy`, `crawlee`, `laravel`), kept intact by the others. */
  frameworks: Record<string, Json>
}

/** A crawl request to seed (`seedRequests`) or store (`requestPayload`): `url` and any of {@link CrawlRequest}'s fields, plus, to seed, the item's own options. */
export interface CrawlRequestInput {
  url: string
  method?: string
  headers?: Array<[string, string]> | Record<string, string | string[]>
  /** Bytes, or text (stored as its UTF-8 bytes). */
  body?: Buffer | Uint8Array | string | null
  userData?: Record<string, Json>
  label?: string | null
  depth?: number
  retries?: number
  foundOn?: string | null
  frameworks?: Record<string, Json>
  priority?: number
  delayMs?: number
  force?: boolean
}

/** What `ackAndLease` resolves with: the acks' results (as `ack` resolves) and the new leases. */
export interface AckAndLease<A> {
  acked: A
  leases: Lease[]
}

/** What `ackWithLinks` resolves with. */
export interface AckWithLinks {
  /** False when the lease was not live any more (its links are seeded all the same). */
  acked: boolean
  /** The links' seed report. */
  links: SeedReport
}

/** What `ackWithLinksAndLease` resolves with. */
export interface AckWithLinksAndLease extends AckWithLinks {
  /** The next leases, as `lease` resolves them. */
  leases: Lease[]
}

export interface AckOptions {
  /** Queue the URL again this many ms later (a recrawl); 0: never; absent: the queue's `revisitAfterMs`. */
  revisitAfterMs?: number
  /** Or queue it again at this time (ms since the epoch, the Redis clock; a past time: at once). */
  revisitAt?: number
}

export interface NackOptions {
  /** Retry (default) or send straight to dead letters. */
  retry?: boolean
  /** Retry after exactly this long instead of the backoff policy. */
  delayMs?: number | null
  /** Stored on the item as its last error. */
  reason?: string | null
  /** The host said "slow down": the attempt is not counted, the host's delay grows. */
  rateLimited?: boolean
  /** The host's `Retry-After` header, as it came (seconds or an HTTP-date): the retry and every lease of the host wait at least that long, at most the queue's `retryAfterMaxMs`. */
  retryAfter?: string
  /** The same as a number of milliseconds. */
  retryAfterMs?: number
  /** The `Retry-After` header as a server sent it, for framework adapters: as `retryAfter`, but one that is neither seconds nor an HTTP-date is ignored (no hold) instead of refused. */
  retryAfterHeader?: string | null
  /** Stored in place of the item's payload (its next attempt, or its dead letter, sees it); null or absent keeps it. */
  payload?: Json
}

export interface ReleaseOptions {
  /** Stored in place of the item's payload; null or absent keeps it. */
  payload?: Json
}

/** What `seenCacheStats` resolves with. */
export interface SeenCacheStats {
  /** Fingerprints held now. */
  entries: number
  /** Links answered "duplicate" from the cache (not sent). */
  hits: number
  /** Links looked up and sent. */
  misses: number
  /** Links sent after all because the seen epoch changed under their hit. */
  resent: number
  /** Times the cache was dropped (a new epoch, or full). */
  resets: number
}

/** Options of `waitHostTurn`. */
export interface HostTurnOptions {
  /** The lease being fetched: a request to its own host runs in its in-flight slot. */
  lease?: Lease | null
  /** The longest wait for the turn (default 30000). */
  timeoutMs?: number | null
}

export type NackOutcome = 'retried' | 'dead' | 'lost'

export interface Stats {
  /** ready + delayed. */
  pending: number
  ready: number
  delayed: number
  leased: number
  dead: number
  done: number
  seen: number
  /** Hosts with at least one ready item. */
  hosts: number
  hostsWaiting: number
  oldestPendingAgeMs: number | null
  seededTotal: number
  duplicatesTotal: number
  leasedTotal: number
  ackedTotal: number
  nackedTotal: number
  retriedTotal: number
  reclaimedTotal: number
  releasedTotal: number
  deadTotal: number
  /** New URLs refused by a host budget. */
  overBudgetTotal: number
  /** Acked URLs scheduled to come back (ack's `revisitAfterMs`); also counted in `delayed`. */
  revisits: number
  /**
   * Seeded URLs that clients' known-seen caches answered as duplicates without sending them
   * (option `seenCache`); also counted in `duplicatesTotal`.
   */
  seenCacheHitsTotal: number
  /** Server time of the reading. */
  now: number
  /** Each shard's own figures (a queue of several shards only). */
  shards?: Stats[]
}

export interface DeadLetter {
  id: string
  url: string | null
  host: string
  key: string | null
  payload: Json
  priority: number
  attempts: number
  lastError: string | null
  diedAt: number
  /** The stored record, when it could not be decoded (the other fields are what could be read). */
  raw: string | null
}

/** A lease a worker holds now (`leasedItems`), as its `Lease` shows it, without `leasedAt`. */
export type LeasedItem = Omit<Lease, 'leasedAt'>

/** The leases held now (`leasedItems`), soonest expiry first. */
export interface LeasedPage {
  /** Leases held in the queue (not only on this page), expired ones not reclaimed yet included. */
  total: number
  /** The Redis clock when the page was read (ms): an item whose `expiresAt` is before it expired. */
  now: number
  items: LeasedItem[]
}

/** A named crawl's counts (`crawlStats`), exact. */
export interface CrawlStats {
  pending: number
  ready: number
  delayed: number
  leased: number
  dead: number
  done: number
  /** URLs of the crawl in the seen set (less those a host deletion forgot). */
  seen: number
  /** Hosts with at least one ready item of the crawl. */
  hosts: number
  /** Age of the oldest item at the front of one of the crawl's lanes; `null`: none ready. */
  oldestPendingAgeMs: number | null
  seededTotal: number
  /** The most of its items leased at once (`setCrawlCap`); `null`: no cap. */
  cap: number | null
  /** Paused by `pauseCrawl`, or being deleted. */
  paused: boolean
  /**
   * Being deleted (`deleteCrawl`): under way, or stopped part-way (its seeds and limit changes
   * are refused until a deletion of it runs to the end).
   */
  deleting: boolean
  /** Hosts held back because their ready items are all of crawls paused or at their cap. */
  heldHosts: number
  /** Its share of each host against the other crawls there (`setCrawlWeight`); 1 by default. */
  weight: number
  /** The most of its items leased a second (`setCrawlRate`); `null`: no rate. */
  rate: number | null
  /** The most new URLs each host may add to it (`setCrawlHostBudget`); `null`: none. */
  hostBudget: number | null
  /**
   * Its items acked over the last minute of the Redis clock, a second (the current minute's
   * count and the part of the minute before that the last 60 seconds still cover).
   */
  donePerSecond: number
  /** Its items seeded (added) over the last minute, a second, reckoned the same way. */
  seededPerSecond: number
}

export interface HostInfo {
  host: string
  /** The per-host delay override (`null`: each worker's default applies). */
  delayMs: number | null
  adaptiveExtraMs: number
  ready: number
  /** Not leasable before this time (epoch ms, the Redis clock), if held back by its politeness delay or a timed pause (`null` while paused until resumed). */
  heldUntil: number | null
  /** Paused (`pauseHost`): no lease takes its items. */
  paused: boolean
  /** When a timed pause ends (epoch ms); `null` when not paused or paused until resumed. */
  pausedUntil: number | null
  /** The most new URLs the host may add (its own budget, else the queue's default); `null`: no budget. */
  budget: number | null
  /** New URLs the host added while the queue had any budget. */
  budgetUsed: number
  budgetRemaining: number | null
  /** A deletion of the host (`deleteHost`) is running: it holds the host paused, and pausing or resuming it changes nothing until it ends. */
  deleting: boolean
  /** The host's own in-flight limit (`setHostInFlight`; `0`: none whatever the default); `null`: the workers' `hostInFlight` applies. */
  inFlightLimit: number | null
  /** Items of the host counted in flight: leased while a limit applied, not answered yet. */
  inFlight: number
  /** Held because it has as many items leased as its limit allows, until an answer frees a slot. */
  full: boolean
  /** The delay override came from the host's robots.txt Crawl-delay (`setHostCrawlDelay`). */
  delayFromRobots: boolean
  /** The host's own pacing (`setHostDelayAfter`); `null`: the workers' `hostDelayAfter` applies. */
  delayAfter: 'lease' | 'answer' | null
  /** The host's own delay factor after the answer; `null`: the workers' `hostDelayFactor`. */
  delayFactor: number | null
}

export interface HostCounts {
  host: string
  /** Items the host holds: ready + delayed + leased + dead. */
  items: number
  ready: number
  delayed: number
  leased: number
  dead: number
  /** When its next ready item may be leased (epoch ms, the Redis clock); `null` when it has no ready item or is paused until resumed. */
  nextDue: number | null
  paused: boolean
  pausedUntil: number | null
}

export interface HostPage {
  /** The most items first, then by host name. */
  hosts: HostCounts[]
  /** Hosts holding at least one item, in the whole queue. */
  total: number
  /** Pass it to `listHosts` for the next page; `null` after the last one. */
  cursor: string | null
}

export interface CrawlDeletion {
  crawl: string
  ready: number
  delayed: number
  /** Leases removed: their acks reject with ERR_CRAWLQ_LEASE_LOST. */
  leased: number
  dead: number
  removed: number
}

export interface HostDeletion {
  host: string
  ready: number
  delayed: number
  /** Leases removed: their acks reject with ERR_CRAWLQ_LEASE_LOST. */
  leased: number
  dead: number
  removed: number
  /** Items of the host that arrived while it was being deleted; they stay. */
  left: number
  /** Removed items whose URLs left the seen set (`forgetSeen`). */
  forgotten: number
}

export interface ReclaimReport {
  requeued: number
  dead: number
  remaining: number
}

export interface QueuedItem {
  id: string
  url: string | null
  host: string
  key: string | null
  payload: Json
  priority: number
  attempt: number
  enqueuedAt: number
  lastError: string | null
}

/** The canonical form crawlq gives an input (`normalize()`). */
export interface Normalized {
  kind: 'url' | 'host'
  canonical: string
  /** Punycode, no port, no trailing dot. */
  host: string
  /** XXH3-128 of the canonical form, 32 hex digits. */
  fingerprint: string
}

/** The `code` of every error the API rejects with (besides `ERR_INVALID_ARG_TYPE`). */
export type CrawlqErrorCode =
  | 'ERR_CRAWLQ_INVALID_ITEM'
  | 'ERR_CRAWLQ_CONFIG'
  | 'ERR_CRAWLQ_INVALID_ARGUMENT'
  | 'ERR_CRAWLQ_UNAVAILABLE'
  | 'ERR_CRAWLQ_TIMEOUT'
  | 'ERR_CRAWLQ_PROTOCOL'
  | 'ERR_CRAWLQ_LEASE_LOST'
  | 'ERR_CRAWLQ_SERVER'
  | 'ERR_CRAWLQ_CORRUPT'

/** `Work` is an async iterable: `for await (const lease of queue.work())`. */
export interface Work extends AsyncIterable<Lease> {}

/**
 * Which binding artifact the generated loader actually loaded: `'native'` for
 * a native addon, otherwise the `platformArchABI` of the WASI flavor. Every
 * flavor napi-rs can build is listed, because `NAPI_RS_NATIVE_LIBRARY_PATH`
 * can point the loader at a WASI artifact this package does not build itself.
 */
export declare const __napiBindingTarget: 'native' | 'wasm32-wasi' | 'wasm32-wasip1'

/**
 * Internal: the reports of one long call whose options held `onProgress` (protocol.js reads
 * them with `next()` and calls `stop()` when the callback throws).
 */
export declare class CallProgress {
  /** Let the call go on past the last report and resolve with its next (null at its end). */
  next(): Promise<unknown>
  /** Stop the call right after the step it reported last. */
  stop(): void
}

/**
 * Internal: the signal of one leasing call whose options held an `AbortSignal` (protocol.js
 * calls `stop()` when it aborts).
 */
export declare class CallSignal {
  /** End the call's wait (a script under way finishes first). */
  stop(): void
}

/** A crawl frontier in Redis. Create one with `await Queue.connect(url, name, options)`. */
export declare class Queue {
  /**
   * Connect to Redis at `url` (`redis://`, `rediss://`, `unix://`) and open the queue
   * `name`. Rejects with `ERR_CRAWLQ_UNAVAILABLE` when Redis cannot be reached and
   * `ERR_CRAWLQ_CONFIG` for an unknown or invalid option.
   */
  static connect(url: string, name: string, options?: QueueOptions): Promise<Queue>
  /** The queue's name. */
  get name(): string
  /** The `extendEveryMs` option (0: off). */
  get extendEveryMs(): number
  /**
   * An async iterator over leases: `for await (const lease of q.work({ max, waitMs, signal }))`.
   * Leaving the loop (break, throw, abort) releases the prefetched leases and the current
   * one if it was not answered.
   */
  work(options?: WorkOptions): Work
  /**
   * Shut the queue down for waiting: every lease call waiting on it (`lease`,
   * `ackAndLease`, `ackWithLinksAndLease`, a `work()` loop's fetch) resolves at once with no
   * leases, `work()` loops end, a lease call made later leases nothing (at once), and the
   * background extender stops. Answers and other calls keep working. The addon's connection does not keep Node.js
   * running, so there is nothing else to let go of (the WebAssembly build's JavaScript
   * client connections do keep it running until closed).
   */
  close(): Promise<void>
  /**
   * Internal (protocol.js): the signal the next method call listens to, for a leasing
   * call given an `AbortSignal`.
   */
  _armNextCall(): CallSignal
  /**
   * Internal (protocol.js): the reports of the next method call, for a long call given
   * `onProgress`.
   */
  _armNextProgress(): CallProgress
  /** Test only: pin the scripts' clock to `ms` since the epoch (`null`: the server's clock). */
  _setFixedClock(ms?: number | undefined | null): void
  /**
   * Seed URLs or hosts (strings, or `{url | host, priority, delayMs, payload, force}`), an
   * array or any iterable of them. Invalid items are reported with their index, never
   * thrown. `onProgress` is called after each round trip with how far the seed is.
   */
  seed(items: string | Iterable<string | SeedItem>, options?: SeedCallOptions): Promise<SeedReport>
  /**
   * Seed crawl requests (`{ url, method, headers, body, userData, label, depth, retries,
   * foundOn, frameworks }` and each one's `priority`, `delayMs`, `force`): stored in the
   * request shape every framework adapter reads, known by their URL (a plain GET) or by
   * method, URL and body. A request whose fields cannot be read is in the report's
   * `invalid` (`invalid_request`); options: `priority`, `delayMs`, `force`, `crawl` (not
   * `payload`: a request is its own payload), `onProgress` as `seed`'s.
   */
  seedRequests(requests: Iterable<CrawlRequestInput>, options?: RequestOptions & { onProgress?: (soFar: SeedProgress) => unknown }): Promise<SeedReport>
  /**
   * Lease up to `max` items (default 1), waiting up to `waitMs` (default 5000) when none is
   * ready; resolves with `[]` after that. `signal` (an AbortSignal, here and in the other
   * leasing calls) ends the wait, rejecting with its reason.
   */
  lease(options?: LeaseOptions): Promise<Lease[]>
  /**
   * Ack a lease (or an array, in one round trip): `true`, or `false` when the lease was no
   * longer live (nothing changed). `revisitAfterMs` queues the URL again that much later (a
   * recrawl; 0: never; absent: the queue's option).
   */
  ack<T extends Lease | Lease[]>(lease: T, options?: AckOptions): Promise<T extends Lease[] ? boolean[] : boolean>
  /**
   * Ack a lease (or an array) and lease up to `max` more items in one call (one round
   * trip): resolves with `{ acked, leases }`, `acked` as `ack` resolves, `leases` as
   * `lease` does (waiting up to `waitMs`, default 5000, when none is ready).
   */
  ackAndLease<T extends Lease | Lease[]>(lease: T, options?: LeaseOptions): Promise<AckAndLease<T extends Lease[] ? boolean[] : boolean>>
  /**
   * Answer a fetched page and seed the links it found, in one round trip: the links are
   * seeded as `seed` seeds them (with `options`), then the lease is acked as `ack` acks it.
   * Links resolve against the page's URL as a browser resolves an `href` (`next.html`,
   * `/about`, `?page=2`; `mailto:` and the like are refused per link).
   * Resolves with `{ acked, links }`: `acked` false when the lease was not live any more
   * (its links are seeded all the same), `links` the links' seed report.
   */
  ackWithLinks(lease: Lease, links: Iterable<string | SeedItem>, options?: SeedOptions): Promise<AckWithLinks>
  /**
   * `ackWithLinks` for crawl requests (as `seedRequests` takes them): the page's lease acked
   * and the requests found on it seeded, in one round trip. Resolves with `{ acked, links }`
   * as `ackWithLinks` does.
   */
  ackWithRequests(lease: Lease, requests: Iterable<CrawlRequestInput>, options?: RequestOptions): Promise<AckWithLinks>
  /**
   * `ackWithLinks`, then lease up to `max` more items in the same call (one round trip per
   * page): resolves with `{ acked, links, leases }`, `leases` as `lease` resolves (waiting
   * up to `waitMs`, default 5000, when none is ready; the lease runs whether or not `lease`
   * was still live). `options` takes the seed options for the links and `max`, `waitMs`,
   * `ttlMs` for the lease.
   */
  ackWithLinksAndLease(lease: Lease, links: Iterable<string | SeedItem>, options?: SeedOptions & LeaseOptions): Promise<AckWithLinksAndLease>
  /**
   * `ackWithRequests`, then lease up to `max` more items in the same call, as
   * `ackWithLinksAndLease` does (one round trip per page for a crawler of crawl requests):
   * resolves with `{ acked, links, leases }`. `options` takes the requests' options
   * (`priority`, `delayMs`, `force`, `crawl`) and `max`, `waitMs`, `ttlMs` for the lease.
   */
  ackWithRequestsAndLease(lease: Lease, requests: Iterable<CrawlRequestInput>, options?: RequestOptions & LeaseOptions): Promise<AckWithLinksAndLease>
  /** Fail a lease (or an array): `'retried'`, `'dead'` or `'lost'`. */
  nack<T extends Lease | Lease[]>(lease: T, options?: NackOptions): Promise<T extends Lease[] ? NackOutcome[] : NackOutcome>
  /**
   * Push a lease's deadline to now + `ttlMs`. One lease: the new `expiresAt`, or a
   * rejection with `ERR_CRAWLQ_LEASE_LOST`. An array: one `expiresAt` or `null` per lease.
   */
  extend<T extends Lease | Lease[]>(lease: T, ttlMs: number): Promise<T extends Lease[] ? Array<number | null> : number>
  /**
   * Give a lease (or an array) back: front of its lane, attempt not counted; a `payload`
   * option replaces the item's stored payload.
   */
  release<T extends Lease | Lease[]>(lease: T, options?: ReleaseOptions): Promise<T extends Lease[] ? boolean[] : boolean>
  /** Recover up to `limit` (default 1000) expired leases now; lease calls also do this. */
  reclaim(options?: { limit?: number }): Promise<ReclaimReport>
  /** Depth and counters, exact and O(1). */
  stats(): Promise<Stats>
  /** A page of dead letters, oldest first. */
  dead(options?: { limit?: number; offset?: number }): Promise<DeadLetter[]>
  /**
   * The dead letters with these ids, in the order given (`null` for an id that is not a
   * dead letter: unknown, requeued or purged). One round trip per shard the ids name.
   */
  deadLetters(ids: string[]): Promise<Array<DeadLetter | null>>
  /**
   * The leases workers hold now, soonest expiry first (an expired one until a lease call
   * reclaims it), `limit` (default 100) from the `offset`-th on, with their total.
   */
  leasedItems(options?: { limit?: number; offset?: number }): Promise<LeasedPage>
  /** Queue dead letters again (the given ids, or all); resolves with how many. */
  requeueDead(ids?: string[]): Promise<number>
  /**
   * Delete the dead letters with these ids, or every one (they stay seen), in calls of
   * at most 500; resolves with how many were deleted.
   */
  purgeDead(ids?: string[]): Promise<number>
  /**
   * Resolves with true when nothing is queued or leased anywhere in the queue: the crawl
   * is over for every worker (done and dead items do not count).
   */
  isFinished(): Promise<boolean>
  /**
   * Extend every lease this queue handed out and that was not answered yet, each to its
   * lease time (what `extendEveryMs` does from a timer); resolves with how many.
   */
  extendHeld(): Promise<number>
  /**
   * Release every lease this queue handed out and that was not answered yet (a worker
   * stopping: SIGTERM), so other workers take the items at once; resolves with how many.
   */
  releaseHeld(): Promise<number>
  /**
   * The known-seen cache's counters (option `seenCache`): `{ entries, hits, misses,
   * resent, resets }` (hits: links answered from it; misses: links sent).
   */
  seenCacheStats(): Promise<SeenCacheStats>
  /** Set a host's politeness delay in ms for every worker (`null`: back to the default). */
  setHostDelay(host: string, delayMs: number | null): Promise<HostInfo>
  /**
   * Set a host's delay from its robots.txt Crawl-delay in ms (`null`: it has none),
   * unless an operator set one (`setHostDelay`); capped by `crawlDelayMaxMs`.
   */
  setHostCrawlDelay(host: string, delayMs: number | null): Promise<HostInfo>
  /**
   * Set the most items of a host leased at once, across every worker (`0`: no limit
   * whatever `hostInFlight`; `null`: back to it).
   */
  setHostInFlight(host: string, limit: number | null): Promise<HostInfo>
  /**
   * Set when a host's delay is counted from, for every worker: `'lease'` or `'answer'`
   * (with an optional `factor`: wait factor x the fetch time when longer); `null`: back
   * to `hostDelayAfter` / `hostDelayFactor`. Applies to the items leased from then on.
   */
  setHostDelayAfter(host: string, after: 'lease' | 'answer' | null, factor?: number | null): Promise<HostInfo>
  /**
   * Wait for a turn of the host of `url` for a request the frontier does not lease (a
   * redirect the HTTP client follows while fetching a lease): spaced from the host's
   * leases and turns by its delay, across every worker; held while the host is at its
   * in-flight limit (except for `lease`'s own host) or paused. Resolves `true` when the
   * request may start now, `false` when its turn would come after `timeoutMs` (default
   * 30000).
   */
  waitHostTurn(url: string, options?: HostTurnOptions): Promise<boolean>
  /**
   * Set the most new URLs a host may add (`null`: back to the queue's default). Seeds of
   * new URLs past it are reported in the seed report's `invalid` with code
   * `budget_exhausted`.
   */
  setHostBudget(host: string, urls: number | null): Promise<HostInfo>
  /** Set the budget of every host without its own (`null`: no default). */
  setDefaultHostBudget(urls: number | null): Promise<void>
  /** The queue's default host budget, or `null`. */
  defaultHostBudget(): Promise<number | null>
  /**
   * Pause the whole queue for every worker: lease calls hand out nothing (blocking ones
   * keep waiting) for `durationMs` (the Redis clock) or, without it, until `resume`.
   * Resolves with whether it was paused already.
   */
  pause(durationMs?: number | null): Promise<boolean>
  /**
   * Let a paused queue lease again (blocked lease calls wake); resolves with whether it
   * was paused.
   */
  resume(): Promise<boolean>
  /** Whether the queue is paused. */
  isPaused(): Promise<boolean>
  /**
   * Whether the Redis server holding the queue may evict its keys when its memory is
   * full (on a Redis Cluster, every master holding a shard): `null` when none may, else
   * why, as the `ERR_CRAWLQ_CONFIG` a queue opened without `allowEviction` rejects with.
   * A monitor opened with `allowEviction` shows it. Only reads.
   */
  evictionRisk(): Promise<string | null>
  /**
   * Pause a host for every worker: no lease takes its items for `durationMs` (the Redis
   * clock) or, without it (or `null`), until `resumeHost`.
   */
  pauseHost(host: string, durationMs?: number | null): Promise<HostInfo>
  /**
   * End a host's pause (what is left of its politeness delay still applies); blocked
   * lease calls wake.
   */
  resumeHost(host: string): Promise<HostInfo>
  /** Politeness state of a host. */
  hostInfo(host: string): Promise<HostInfo>
  /**
   * A named crawl's counts, exact, summed over the shards; zeros for a crawl never
   * seeded; with its cap, whether it is paused and the hosts held for it.
   */
  crawlStats(crawl: string): Promise<CrawlStats>
  /**
   * Cap a named crawl: at most `cap` of its items leased at once by all workers
   * together (`null`: no cap). Other crawls on its hosts are leased meanwhile. With
   * several shards the cap is split among them and must be at least the shard count.
   * Resolves with the crawl's stats.
   */
  setCrawlCap(crawl: string, cap: number | null): Promise<CrawlStats>
  /**
   * Weigh a named crawl against the others on its hosts: each host's leases go to the
   * crawls with due work there in proportion to their weights (`null`: the default, 1),
   * for the items queued from now on. Resolves with the crawl's stats.
   */
  setCrawlWeight(crawl: string, weight: number | null): Promise<CrawlStats>
  /**
   * Give a named crawl a host budget: each host may add at most `urls` new URLs to the
   * crawl (`null`: none). New URLs past it are refused per item (`budget_exhausted`)
   * and not marked seen; the host's own budget holds as well. Resolves with the
   * crawl's stats.
   */
  setCrawlHostBudget(crawl: string, urls: number | null): Promise<CrawlStats>
  /**
   * Limit a named crawl's rate: at most `perSecond` of its items leased a second by all
   * workers together, spaced evenly (`null`: no rate); other crawls are leased
   * meanwhile. With several shards each shard leases its share. Resolves with the
   * crawl's stats.
   */
  setCrawlRate(crawl: string, perSecond: number | null): Promise<CrawlStats>
  /**
   * Pause a named crawl: none of its items is leased until `resumeCrawl`; its leases in
   * hand may be answered, seeds go on, other crawls are leased as before.
   */
  pauseCrawl(crawl: string): Promise<void>
  /** Resume a paused crawl: the hosts held for it go back to be leased. */
  resumeCrawl(crawl: string): Promise<void>
  /** The queue's named crawls, sorted: each that seeded an item or has a cap or pause. */
  crawls(): Promise<string[]>
  /**
   * Delete a named crawl: its items (its leases answer lost), counts, limits and
   * listing, in bounded calls while workers run; other crawls are not touched. Seeds
   * into it are refused while the deletion runs; afterwards the name starts a fresh
   * crawl, to which its URLs are new. `onProgress` is called after each bounded step
   * with the totals so far (the last call's are the result's); the deletion waits for
   * it (and for the promise it returns). If it throws (or its promise rejects), the
   * deletion stops right after that step and rejects with that error: what was
   * deleted stays deleted, and calling again finishes the job.
   */
  deleteCrawl(crawl: string, options?: { onProgress?: (soFar: CrawlDeletion) => unknown }): Promise<CrawlDeletion>
  /**
   * A page of the hosts holding items (queued, leased or dead), the most items first,
   * with their ready, delayed, leased and dead counts. Pass the page's `cursor` for the
   * next one (`null` after the last). Each call is bounded (`limit` at most 1000,
   * default 100).
   */
  listHosts(options?: { cursor?: string | null; limit?: number }): Promise<HostPage>
  /**
   * Delete a host: its ready, delayed, leased and dead items and its settings (delay,
   * pause, budget). Its leases answer lost. Its URLs stay seen unless `forgetSeen` (then
   * the removed items can be seeded again). Safe while workers run. `onProgress`: as
   * `deleteCrawl`'s.
   */
  deleteHost(host: string, options?: { forgetSeen?: boolean; onProgress?: (soFar: HostDeletion) => unknown }): Promise<HostDeletion>
  /**
   * Delete the whole queue: every shard's items, dead letters, host and crawl settings,
   * counters and seen set; resolves with how many Redis keys were deleted. Rejects with
   * `ERR_CRAWLQ_INVALID_ARGUMENT` while items are leased unless `evenIfLeased`: stop the
   * workers first, as a worker still running makes parts of the queue again. The queue
   * opened again under its name is a new one: its URLs can be seeded again. This handle
   * goes on with its shards: its next seed (or, opened with `shards`, its next call)
   * makes the queue again with them; its reads before that make nothing again.
   * `onProgress` is called after each bounded step with the keys deleted so far, as
   * `deleteCrawl`'s is; a removal it stops leaves the queue part-removed: remove it
   * again before using its name.
   */
  removeQueue(options?: { evenIfLeased?: boolean; onProgress?: (keysSoFar: number) => unknown }): Promise<number>
  /** The next items lease would take (one per leasable host), without leasing them. */
  peek(options?: { limit?: number }): Promise<QueuedItem[]>
  /**
   * One host's ready items in the order its leases take them, from `offset` on (paused
   * or held or not; delayed items are not listed; at most 250 a call), without leasing
   * them.
   */
  peekHost(host: string, options?: { limit?: number, offset?: number }): Promise<QueuedItem[]>
}

/**
 * The iterator `Queue.work()` returns: the core's `Work` loop behind the async iterator
 * protocol (`next`, `return`).
 */
export declare class Work {
  /** The next lease (`{ value, done: false }`), or `{ done: true }` once finished. */
  next(): Promise<IteratorResult<Lease, undefined>>
  /** Stop and release what the iterator still holds (called by `for await` on `break`). */
  return(): Promise<IteratorResult<Lease, undefined>>
  /** Stop and release what the iterator still holds. */
  close(): Promise<void>
}

/**
 * The default of every queue option (milliseconds for durations; `null`: unset), from the
 * core's option table: what framework adapters read instead of defaults of their own.
 */
export declare function defaultOptions(): { [K in Exclude<keyof QueueOptions, 'fixedClock'>]-?: QueueOptions[K] | null }

/**
 * The options a framework adapter opens its queue with: `options`, checked, with
 * `extendEveryMs` a third of `leaseTtlMs` unless given.
 */
export declare function frameworkOptions(options?: QueueOptions): QueueOptions

/**
 * The canonical form crawlq gives an input: `{ kind, canonical, host, fingerprint }`. Throws
 * an `Error` with code `ERR_CRAWLQ_INVALID_ITEM` (and `reason`) for an input it would refuse.
 */
export declare function normalize(input: string): Normalized

/**
 * A Redis URL without its user info (`redis://***@host:6379/0`), as connect errors name
 * it: for logging where a queue is without its password.
 */
export declare function redactedUrl(url: string): string

/**
 * The crawl request of a lease (docs/PROTOCOL.md section 10): `{ url, method, headers, body
 * (a Buffer or null), userData, label, depth, retries, foundOn, frameworks }`. An item seeded
 * through the plain API is a GET of its URL with its payload as `userData`. Throws an `Error`
 * with code `ERR_CRAWLQ_PROTOCOL` for a host item or a request this version cannot read
 * (dead-letter it as `undecodable: ...`).
 */
export declare function requestOf(lease: Lease): CrawlRequest

/**
 * The payload a crawl request (an object as `requestOf` returns it) is stored as: what a
 * nack or release stores to keep an updated request (its retries, its framework's fields).
 */
export declare function requestPayload(request: CrawlRequestInput): Record<string, unknown>

/**
 * The payload that stores a leased crawl request again with `changes` (`requestOf`'s fields;
 * `frameworks` changes replace that framework's namespace only), read from the item as
 * stored: what a retry's nack or a release stores.
 */
export declare function requestUpdate(lease: Lease, changes?: Partial<CrawlRequestInput>): Record<string, unknown>

/** The shard an input (URL or host) belongs to in a queue of `shards` shards (1..1024). */
export declare function shardOf(input: string, shards: number): number
