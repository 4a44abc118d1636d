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
