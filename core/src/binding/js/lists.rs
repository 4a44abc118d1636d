//! The lists both JavaScript packages expand: the `Queue` methods and the package's functions.

/// The list of queue methods, handed to the macro `$expand` of a JavaScript package. Each row:
/// the Rust name, the JavaScript name, the TypeScript generic parameters in angle brackets
/// (optional), the argument names in parentheses (camelCase: they name the argument in error
/// messages; `lease` is a lease or an array of them), the TypeScript argument list, the
/// TypeScript return type and the lines of the method's doc comment (plain string literals:
/// napi copies them into index.d.ts as they are spelled).
#[doc(hidden)]
#[macro_export]
macro_rules! js_queue_methods {
    ($expand:ident) => {
        $expand! {
            seed "seed" (items, options) "items: string | Iterable<string | SeedItem>, options?: SeedCallOptions" "Promise<SeedReport>"
                "Seed URLs or hosts (strings, or `{url | host, priority, delayMs, payload, force}`), an"
                "array or any iterable of them. Invalid items are reported with their index, never"
                "thrown. `onProgress` is called after each round trip with how far the seed is.";
            seed_requests "seedRequests" (requests, options) "requests: Iterable<CrawlRequestInput>, options?: RequestOptions & { onProgress?: (soFar: SeedProgress) => unknown }" "Promise<SeedReport>"
                "Seed crawl requests (`{ url, method, headers, body, userData, label, depth, retries,"
                "foundOn, frameworks }` and each one's `priority`, `delayMs`, `force`): stored in the"
                "request shape every framework adapter reads, known by their URL (a plain GET) or by"
                "method, URL and body. A request whose fields cannot be read is in the report's"
                "`invalid` (`invalid_request`); options: `priority`, `delayMs`, `force`, `crawl` (not"
                "`payload`: a request is its own payload), `onProgress` as `seed`'s.";
            lease "lease" (options) "options?: LeaseOptions" "Promise<Lease[]>"
                "Lease up to `max` items (default 1), waiting up to `waitMs` (default 5000) when none is"
                "ready; resolves with `[]` after that. `signal` (an AbortSignal, here and in the other"
                "leasing calls) ends the wait, rejecting with its reason.";
            ack "ack" <"T extends Lease | Lease[]"> (lease, options) "lease: T, options?: AckOptions" "Promise<T extends Lease[] ? boolean[] : boolean>"
                "Ack a lease (or an array, in one round trip): `true`, or `false` when the lease was no"
                "longer live (nothing changed). `revisitAfterMs` queues the URL again that much later (a"
                "recrawl; 0: never; absent: the queue's option).";
            ack_and_lease "ackAndLease" <"T extends Lease | Lease[]"> (lease, options) "lease: T, options?: LeaseOptions" "Promise<AckAndLease<T extends Lease[] ? boolean[] : boolean>>"
                "Ack a lease (or an array) and lease up to `max` more items in one call (one round"
                "trip): resolves with `{ acked, leases }`, `acked` as `ack` resolves, `leases` as"
                "`lease` does (waiting up to `waitMs`, default 5000, when none is ready).";
            ack_with_links "ackWithLinks" (lease, links, options) "lease: Lease, links: Iterable<string | SeedItem>, options?: SeedOptions" "Promise<AckWithLinks>"
                "Answer a fetched page and seed the links it found, in one round trip: the links are"
                "seeded as `seed` seeds them (with `options`), then the lease is acked as `ack` acks it."
                "Links resolve against the page's URL as a browser resolves an `href` (`next.html`,"
                "`/about`, `?page=2`; `mailto:` and the like are refused per link)."
                "Resolves with `{ acked, links }`: `acked` false when the lease was not live any more"
                "(its links are seeded all the same), `links` the links' seed report.";
            ack_with_requests "ackWithRequests" (lease, requests, options) "lease: Lease, requests: Iterable<CrawlRequestInput>, options?: RequestOptions" "Promise<AckWithLinks>"
                "`ackWithLinks` for crawl requests (as `seedRequests` takes them): the page's lease acked"
                "and the requests found on it seeded, in one round trip. Resolves with `{ acked, links }`"
                "as `ackWithLinks` does.";
            ack_with_links_and_lease "ackWithLinksAndLease" (lease, links, options) "lease: Lease, links: Iterable<string | SeedItem>, options?: SeedOptions & LeaseOptions" "Promise<AckWithLinksAndLease>"
                "`ackWithLinks`, then lease up to `max` more items in the same call (one round trip per"
                "page): resolves with `{ acked, links, leases }`, `leases` as `lease` resolves (waiting"
                "up to `waitMs`, default 5000, when none is ready; the lease runs whether or not `lease`"
                "was still live). `options` takes the seed options for the links and `max`, `waitMs`,"
                "`ttlMs` for the lease.";
            ack_with_requests_and_lease "ackWithRequestsAndLease" (lease, requests, options) "lease: Lease, requests: Iterable<CrawlRequestInput>, options?: RequestOptions & LeaseOptions" "Promise<AckWithLinksAndLease>"
                "`ackWithRequests`, then lease up to `max` more items in the same call, as"
                "`ackWithLinksAndLease` does (one round trip per page for a crawler of crawl requests):"
                "resolves with `{ acked, links, leases }`. `options` takes the requests' options"
                "(`priority`, `delayMs`, `force`, `crawl`) and `max`, `waitMs`, `ttlMs` for the lease.";
            nack "nack" <"T extends Lease | Lease[]"> (lease, options) "lease: T, options?: NackOptions" "Promise<T extends Lease[] ? NackOutcome[] : NackOutcome>"
                "Fail a lease (or an array): `'retried'`, `'dead'` or `'lost'`.";
            extend "extend" <"T extends Lease | Lease[]"> (lease, ttlMs) "lease: T, ttlMs: number" "Promise<T extends Lease[] ? Array<number | null> : number>"
                "Push a lease's deadline to now + `ttlMs`. One lease: the new `expiresAt`, or a"
                "rejection with `ERR_CRAWLQ_LEASE_LOST`. An array: one `expiresAt` or `null` per lease.";
            release "release" <"T extends Lease | Lease[]"> (lease, options) "lease: T, options?: ReleaseOptions" "Promise<T extends Lease[] ? boolean[] : boolean>"
                "Give a lease (or an array) back: front of its lane, attempt not counted; a `payload`"
                "option replaces the item's stored payload.";
            reclaim "reclaim" (options) "options?: { limit?: number }" "Promise<ReclaimReport>"
                "Recover up to `limit` (default 1000) expired leases now; lease calls also do this.";
            stats "stats" () "" "Promise<Stats>"
                "Depth and counters, exact and O(1).";
            dead "dead" (options) "options?: { limit?: number; offset?: number }" "Promise<DeadLetter[]>"
                "A page of dead letters, oldest first.";
            dead_letters "deadLetters" (ids) "ids: string[]" "Promise<Array<DeadLetter | null>>"
                "The dead letters with these ids, in the order given (`null` for an id that is not a"
                "dead letter: unknown, requeued or purged). One round trip per shard the ids name.";
            leased_items "leasedItems" (options) "options?: { limit?: number; offset?: number }" "Promise<LeasedPage>"
                "The leases workers hold now, soonest expiry first (an expired one until a lease call"
                "reclaims it), `limit` (default 100) from the `offset`-th on, with their total.";
            requeue_dead "requeueDead" (ids) "ids?: string[]" "Promise<number>"
                "Queue dead letters again (the given ids, or all); resolves with how many.";
            purge_dead "purgeDead" (ids) "ids?: string[]" "Promise<number>"
                "Delete the dead letters with these ids, or every one (they stay seen), in calls of"
                "at most 500; resolves with how many were deleted.";
            is_finished "isFinished" () "" "Promise<boolean>"
                "Resolves with true when nothing is queued or leased anywhere in the queue: the crawl"
                "is over for every worker (done and dead items do not count).";
            extend_held "extendHeld" () "" "Promise<number>"
                "Extend every lease this queue handed out and that was not answered yet, each to its"
                "lease time (what `extendEveryMs` does from a timer); resolves with how many.";
            release_held "releaseHeld" () "" "Promise<number>"
                "Release every lease this queue handed out and that was not answered yet (a worker"
                "stopping: SIGTERM), so other workers take the items at once; resolves with how many.";
            seen_cache_stats "seenCacheStats" () "" "Promise<SeenCacheStats>"
                "The known-seen cache's counters (option `seenCache`): `{ entries, hits, misses,"
                "resent, resets }` (hits: links answered from it; misses: links sent).";
            set_host_delay "setHostDelay" (host, delayMs) "host: string, delayMs: number | null" "Promise<HostInfo>"
                "Set a host's politeness delay in ms for every worker (`null`: back to the default).";
            set_host_crawl_delay "setHostCrawlDelay" (host, delayMs) "host: string, delayMs: number | null" "Promise<HostInfo>"
                "Set a host's delay from its robots.txt Crawl-delay in ms (`null`: it has none),"
                "unless an operator set one (`setHostDelay`); capped by `crawlDelayMaxMs`.";
            set_host_in_flight "setHostInFlight" (host, limit) "host: string, limit: number | null" "Promise<HostInfo>"
                "Set the most items of a host leased at once, across every worker (`0`: no limit"
                "whatever `hostInFlight`; `null`: back to it).";
            set_host_delay_after "setHostDelayAfter" (host, after, factor) "host: string, after: 'lease' | 'answer' | null, factor?: number | null" "Promise<HostInfo>"
                "Set when a host's delay is counted from, for every worker: `'lease'` or `'answer'`"
                "(with an optional `factor`: wait factor x the fetch time when longer); `null`: back"
                "to `hostDelayAfter` / `hostDelayFactor`. Applies to the items leased from then on.";
            wait_host_turn "waitHostTurn" (url, options) "url: string, options?: HostTurnOptions" "Promise<boolean>"
                "Wait for a turn of the host of `url` for a request the frontier does not lease (a"
                "redirect the HTTP client follows while fetching a lease): spaced from the host's"
                "leases and turns by its delay, across every worker; held while the host is at its"
                "in-flight limit (except for `lease`'s own host) or paused. Resolves `true` when the"
                "request may start now, `false` when its turn would come after `timeoutMs` (default"
                "30000).";
            set_host_budget "setHostBudget" (host, urls) "host: string, urls: number | null" "Promise<HostInfo>"
                "Set the most new URLs a host may add (`null`: back to the queue's default). Seeds of"
                "new URLs past it are reported in the seed report's `invalid` with code"
                "`budget_exhausted`.";
            set_default_host_budget "setDefaultHostBudget" (urls) "urls: number | null" "Promise<void>"
                "Set the budget of every host without its own (`null`: no default).";
            default_host_budget "defaultHostBudget" () "" "Promise<number | null>"
                "The queue's default host budget, or `null`.";
            pause "pause" (durationMs) "durationMs?: number | null" "Promise<boolean>"
                "Pause the whole queue for every worker: lease calls hand out nothing (blocking ones"
                "keep waiting) for `durationMs` (the Redis clock) or, without it, until `resume`."
                "Resolves with whether it was paused already.";
            resume "resume" () "" "Promise<boolean>"
                "Let a paused queue lease again (blocked lease calls wake); resolves with whether it"
                "was paused.";
            is_paused "isPaused" () "" "Promise<boolean>"
                "Whether the queue is paused.";
            eviction_risk "evictionRisk" () "" "Promise<string | null>"
                "Whether the Redis server holding the queue may evict its keys when its memory is"
                "full (on a Redis Cluster, every master holding a shard): `null` when none may, else"
                "why, as the `ERR_CRAWLQ_CONFIG` a queue opened without `allowEviction` rejects with."
                "A monitor opened with `allowEviction` shows it. Only reads.";
            pause_host "pauseHost" (host, durationMs) "host: string, durationMs?: number | null" "Promise<HostInfo>"
                "Pause a host for every worker: no lease takes its items for `durationMs` (the Redis"
                "clock) or, without it (or `null`), until `resumeHost`.";
            resume_host "resumeHost" (host) "host: string" "Promise<HostInfo>"
                "End a host's pause (what is left of its politeness delay still applies); blocked"
                "lease calls wake.";
            host_info "hostInfo" (host) "host: string" "Promise<HostInfo>"
                "Politeness state of a host.";
            crawl_stats "crawlStats" (crawl) "crawl: string" "Promise<CrawlStats>"
                "A named crawl's counts, exact, summed over the shards; zeros for a crawl never"
                "seeded; with its cap, whether it is paused and the hosts held for it.";
            set_crawl_cap "setCrawlCap" (crawl, cap) "crawl: string, cap: number | null" "Promise<CrawlStats>"
                "Cap a named crawl: at most `cap` of its items leased at once by all workers"
                "together (`null`: no cap). Other crawls on its hosts are leased meanwhile. With"
                "several shards the cap is split among them and must be at least the shard count."
                "Resolves with the crawl's stats.";
            set_crawl_weight "setCrawlWeight" (crawl, weight) "crawl: string, weight: number | null" "Promise<CrawlStats>"
                "Weigh a named crawl against the others on its hosts: each host's leases go to the"
                "crawls with due work there in proportion to their weights (`null`: the default, 1),"
                "for the items queued from now on. Resolves with the crawl's stats.";
            set_crawl_host_budget "setCrawlHostBudget" (crawl, urls) "crawl: string, urls: number | null" "Promise<CrawlStats>"
                "Give a named crawl a host budget: each host may add at most `urls` new URLs to the"
                "crawl (`null`: none). New URLs past it are refused per item (`budget_exhausted`)"
                "and not marked seen; the host's own budget holds as well. Resolves with the"
                "crawl's stats.";
            set_crawl_rate "setCrawlRate" (crawl, perSecond) "crawl: string, perSecond: number | null" "Promise<CrawlStats>"
                "Limit a named crawl's rate: at most `perSecond` of its items leased a second by all"
                "workers together, spaced evenly (`null`: no rate); other crawls are leased"
                "meanwhile. With several shards each shard leases its share. Resolves with the"
                "crawl's stats.";
            pause_crawl "pauseCrawl" (crawl) "crawl: string" "Promise<void>"
                "Pause a named crawl: none of its items is leased until `resumeCrawl`; its leases in"
                "hand may be answered, seeds go on, other crawls are leased as before.";
            resume_crawl "resumeCrawl" (crawl) "crawl: string" "Promise<void>"
                "Resume a paused crawl: the hosts held for it go back to be leased.";
            crawls "crawls" () "" "Promise<string[]>"
                "The queue's named crawls, sorted: each that seeded an item or has a cap or pause.";
            delete_crawl "deleteCrawl" (crawl, options) "crawl: string, options?: { onProgress?: (soFar: CrawlDeletion) => unknown }" "Promise<CrawlDeletion>"
                "Delete a named crawl: its items (its leases answer lost), counts, limits and"
                "listing, in bounded calls while workers run; other crawls are not touched. Seeds"
                "into it are refused while the deletion runs; afterwards the name starts a fresh"
                "crawl, to which its URLs are new. `onProgress` is called after each bounded step"
                "with the totals so far (the last call's are the result's); the deletion waits for"
                "it (and for the promise it returns). If it throws (or its promise rejects), the"
                "deletion stops right after that step and rejects with that error: what was"
                "deleted stays deleted, and calling again finishes the job.";
            list_hosts "listHosts" (options) "options?: { cursor?: string | null; limit?: number }" "Promise<HostPage>"
                "A page of the hosts holding items (queued, leased or dead), the most items first,"
                "with their ready, delayed, leased and dead counts. Pass the page's `cursor` for the"
                "next one (`null` after the last). Each call is bounded (`limit` at most 1000,"
                "default 100).";
            delete_host "deleteHost" (host, options) "host: string, options?: { forgetSeen?: boolean; onProgress?: (soFar: HostDeletion) => unknown }" "Promise<HostDeletion>"
                "Delete a host: its ready, delayed, leased and dead items and its settings (delay,"
                "pause, budget). Its leases answer lost. Its URLs stay seen unless `forgetSeen` (then"
                "the removed items can be seeded again). Safe while workers run. `onProgress`: as"
                "`deleteCrawl`'s.";
            remove_queue "removeQueue" (options) "options?: { evenIfLeased?: boolean; onProgress?: (keysSoFar: number) => unknown }" "Promise<number>"
                "Delete the whole queue: every shard's items, dead letters, host and crawl settings,"
                "counters and seen set; resolves with how many Redis keys were deleted. Rejects with"
                "`ERR_CRAWLQ_INVALID_ARGUMENT` while items are leased unless `evenIfLeased`: stop the"
                "workers first, as a worker still running makes parts of the queue again. The queue"
                "opened again under its name is a new one: its URLs can be seeded again. This handle"
                "goes on with its shards: its next seed (or, opened with `shards`, its next call)"
                "makes the queue again with them; its reads before that make nothing again."
                "`onProgress` is called after each bounded step with the keys deleted so far, as"
                "`deleteCrawl`'s is; a removal it stops leaves the queue part-removed: remove it"
                "again before using its name.";
            peek "peek" (options) "options?: { limit?: number }" "Promise<QueuedItem[]>"
                "The next items lease would take (one per leasable host), without leasing them.";
            peek_host "peekHost" (host, options) "host: string, options?: { limit?: number, offset?: number }" "Promise<QueuedItem[]>"
                "One host's ready items in the order its leases take them, from `offset` on (paused"
                "or held or not; delayed items are not listed; at most 250 a call), without leasing"
                "them.";
        }
    };
}

/// The list of the package's functions (beside `Queue`), handed to the macro `$expand` of a
/// JavaScript package, rows as in [`js_queue_methods!`](crate::js_queue_methods); an argument
/// named `config` holds queue options (a value JSON cannot hold in it is a configuration
/// error). Their bodies are [`call_function`].
#[doc(hidden)]
#[macro_export]
macro_rules! js_functions {
    ($expand:ident) => {
        $expand! {
            shard_of "shardOf" (input, shards) "input: string, shards: number" "number"
                "The shard an input (URL or host) belongs to in a queue of `shards` shards (1..1024).";
            normalize "normalize" (input) "input: string" "Normalized"
                "The canonical form crawlq gives an input: `{ kind, canonical, host, fingerprint }`. Throws"
                "an `Error` with code `ERR_CRAWLQ_INVALID_ITEM` (and `reason`) for an input it would refuse.";
            request_of "requestOf" (lease) "lease: Lease" "CrawlRequest"
                "The crawl request of a lease (docs/PROTOCOL.md section 10): `{ url, method, headers, body"
                "(a Buffer or null), userData, label, depth, retries, foundOn, frameworks }`. An item seeded"
                "through the plain API is a GET of its URL with its payload as `userData`. Throws an `Error`"
                "with code `ERR_CRAWLQ_PROTOCOL` for a host item or a request this version cannot read"
                "(dead-letter it as `undecodable: ...`).";
            request_payload "requestPayload" (request) "request: CrawlRequestInput" "Record<string, unknown>"
                "The payload a crawl request (an object as `requestOf` returns it) is stored as: what a"
                "nack or release stores to keep an updated request (its retries, its framework's fields).";
            request_update "requestUpdate" (lease, changes) "lease: Lease, changes?: Partial<CrawlRequestInput>" "Record<string, unknown>"
                "The payload that stores a leased crawl request again with `changes` (`requestOf`'s fields;"
                "`frameworks` changes replace that framework's namespace only), read from the item as"
                "stored: what a retry's nack or a release stores.";
            default_options "defaultOptions" () "" "{ [K in Exclude<keyof QueueOptions, 'fixedClock'>]-?: QueueOptions[K] | null }"
                "The default of every queue option (milliseconds for durations; `null`: unset), from the"
                "core's option table: what framework adapters read instead of defaults of their own.";
            framework_options "frameworkOptions" (config) "options?: QueueOptions" "QueueOptions"
                "The options a framework adapter opens its queue with: `options`, checked, with"
                "`extendEveryMs` a third of `leaseTtlMs` unless given.";
            redacted_url "redactedUrl" (url) "url: string" "string"
                "A Redis URL without its user info (`redis://***@host:6379/0`), as connect errors name"
                "it: for logging where a queue is without its password.";
        }
    };
}
