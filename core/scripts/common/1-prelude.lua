-- crawlq script: common (prelude)
-- protocol: 7
-- flags: prepended to every script (the script's own flags apply)
-- KEYS: 1 the queue's meta key <base>:meta; the other keys are built from the base (ARGV[1])
-- ARGV: 1 key base (prefix of per-host, seen and live keys), 2 call flags and clock: 'r' for a
--       shard reporting to its queue's index, 'c' in a Redis Cluster, then a clock override in
--       ms ('' = server TIME); then the operation's own arguments from ARGV[3] on
-- reply: none; this prelude is prepended to every operation script before it is loaded
-- Shared helpers: record parsing and rebuilding, host lanes, host scheduling, the live set, dead
-- letters, and the checks every script makes before its first write.

local PROTOCOL = 7
-- the same as Redis stores it: compared and written without converting a number
local PROTOCOL_DIGITS = '7'
-- Queues of protocol 2 to 6 are valid queues of protocol 7 (protocol 2: every host has its
-- priority set, every record its attempt count; 2 and 3: every record its host; 4: a queue of
-- several shards tagged <queue>:<shard>; 5: no in-flight counts; 6: no named crawls); they are
-- read as they are and marked 3, 4, 5, 6 or 7 before the first write older clients could not
-- read (own_format). Only items of a named crawl mark a queue 7, so a queue of protocol 7 is
-- one that may hold crawl lanes (CRAWL.on).
local OLDER_FORMATS = { ['2'] = true, ['3'] = true, ['4'] = true, ['5'] = true, ['6'] = true }
-- What a record or lane written by protocol 4's rules needs (own_format's default): a one-shard
-- queue's data is the same in protocol 4 and 5, so such writes keep protocol 4 clients in.
local RECORD_FORMAT = '4'

-- The globals the scripts use, as upvalues: cheaper to reach than globals, more so in a
-- functions library, whose globals sit behind a protected table. The first call's begin() sets
-- them (while a library loads, only `redis`, its loading API, is there); they are the same for
-- every later call.
local function runtime_globals()
  return redis, string, math, table, tonumber, type, unpack, ipairs, select
end
local redis = redis
local string, math, table, tonumber, type, unpack, ipairs, select
-- This server's Lua state, as part of the seen epoch (seed.lua, SEED.epoch): a library's first
-- call sets it from the server's clock (the library's source sets it to false after this
-- prelude). A restart, a replica taking over or the library loaded again starts a new state,
-- and so a new epoch: Redis may have lost writes then (an AOF's last second, a replica's lag),
-- seen members among them, which clients' caches must not answer for. With EVAL (no library)
-- it stays '': each call is a state of its own.
local LUA_STATE = ''

-- Per-call state, set by begin() at the start of every call. The helpers below read it as
-- upvalues, so they are defined once: when the scripts run as a Redis Functions library the
-- definitions run once at FUNCTION LOAD, not on every call.
local K_META, K_READY, K_WAIT, K_HEADS, K_DELAYED, K_LEASED, K_LEASES
local K_DEAD, K_DEADREC, K_HOSTDELAY, K_ADAPTIVE, K_WAKE
-- Built from the base: host -> '<until ms>:<politeness hold ms or empty>' for paused hosts;
-- host -> budget (most URLs it may add) and host -> URLs it added while budgets were on.
local K_HOSTPAUSE, K_HOSTBUDGET, K_HOSTUSED
-- Built from the base: ids of the records in `delayed` that are scheduled revisits.
local K_REVISITS
-- Built from the base: host -> the id of the deletion (host_delete) running on it. While an
-- entry is there the deletion's hold on the host stands: pausing and resuming it change nothing.
local K_HOSTDELETING
-- Built from the base: per-host counts for listing hosts. hostitems (zset): host -> minus the
-- items it holds (queued, leased or dead), so its order is the hosts by backlog; hostdelayed and hostdead
-- (hashes): host -> its items in `delayed` and in dead letters. Ready items are counted from the
-- host's lanes and leased ones are the rest, so leasing and releasing cost nothing here. An
-- entry is removed when it reaches 0.
local K_HOSTITEMS, K_HOSTDELAYED, K_HOSTDEAD
-- Built from the base: the in-flight limits (section 3 of docs/PROTOCOL.md, "In flight").
-- hostlimit: host -> its own limit ('0': none, whatever the workers' default); hostflight: host
-- -> its items leased under a limit; hostfull: host -> the time (ms) its politeness delay lets
-- it be leased again, for a host held in `wait` because it has as many items leased as its
-- limit allows (held at PAUSED_FOREVER until an answer frees a slot). The delay after the
-- answer ("Delay after the answer" in the same section): hostpacing: host -> its own mode
-- ('lease', 'answer' or 'answer:<factor>'); hostanswer: host -> '<delay ms>:<factor>:<max ms>',
-- written by each lease of a host paced after the answer, read by its answers.
-- These keys, the in-flight helpers below and their per-call state live in one table,
-- FLIGHT (a script's main chunk may hold at most 200 locals, and every script is this prelude
-- plus its own): FLIGHT.limits, FLIGHT.counts and FLIGHT.full are the keys; FLIGHT.default,
-- the workers' default limit (0: none), and FLIGHT.overrides, whether any host has its own,
-- are set by FLIGHT.start, with FLIGHT.answer_default (the workers' mode is 'answer'),
-- FLIGHT.factor and FLIGHT.delay_max (their factor and max, as digits) and FLIGHT.paced_hosts
-- (whether any host has its own mode); FLIGHT.answering, whether any host has leases paced
-- after the answer, is set by FLIGHT.any; FLIGHT.freed_at is the earliest time a host whose
-- slot an answer freed may be leased (reported() folds it in).
local FLIGHT = {}
local BASE, STORED_FORMAT
-- The shard's split (see LEVEL_SIZE): 1 unless the call passes one (a shard of spread tags);
-- then meta.split, read at the first use of the seen or live set (resolve_split), or the
-- call's for a base not written yet. SPLIT_ASKED: the call's.
local SPLIT, SPLIT_ASKED
-- The fields of `meta` begin() reads with `format`, in the same command (a command from Lua
-- costs about as much as three more fields): META[2] `paused` and META[3] `token` (lease),
-- META[4] `seen` (the seen level: seed, ack, anything that adds or removes live members). Only
-- seed changes `seen`, once, after its last read. (One table, not three names: a function may
-- reach at most 60 names outside it, and the lease is near that.)
local META
-- A key that never exists: `<base>:probe`.
local K_PROBE
-- Named crawls (docs/crawls.md): a crawl's items of one priority on a host wait in its crawl
-- lane there, a list `<base>:lz:<priority>:<crawl>:<host>` in the order of their tags, each
-- record's "tag" given when the item is queued (start-time fair queuing per host: CRAWL.tag);
-- `<base>:hl:<host>` lists the host's crawl lanes by the rank of their heads. CRAWL.on(): the
-- queue may hold crawl lanes (it is marked 7). One table: a script's main chunk may hold at
-- most 200 locals.
local CRAWL = {}
-- NOW in ms (and as digits); NOW_US in microseconds, the floor of new lease tokens.
local NOW, NOW_US, NOW_DIGITS
-- Set by the call flag 'r' (a shard of a queue of several shards): the call reports to the
-- queue's index of shards with work (see reported() below).
local REPORT
-- The lanes the last hosts_list read (hosts_list_shards shares one lane budget over shards).
local LANES_READ = 0
-- Seen- and live-set bucket keys of this call's queue: a table per level (level_keys).
local SEEN_PREFIX, LIVE_PREFIX

-- Host ranks order due hosts by the head of their best lane: priority first (higher first),
-- then arrival sequence. Both parts fit in the 53 exact bits of a ZSET score.
local SEQ_SPAN = 137438953472 -- 2^37 sequence numbers per priority

-- The `wait` score (and pause end) of a host paused until resumed: 2^53 - 1 ms, far past any
-- clock or pause length, so it never comes due.
local PAUSED_FOREVER = 9007199254740991

-- meta.layout, written by the first seed that adds an item: longer than Redis's default
-- hash-max-listpack-value (64 bytes), so meta is a hash table, whose fields are found by their
-- hash where a listpack's are found by a scan (docs/PROTOCOL.md, section 1).
local META_LAYOUT = 'hashtable: a value past hash-max-listpack-value keeps meta a hash table'

local function rank(prio, seq)
  return (32767 - prio) * SEQ_SPAN + seq
end

-- The priority of a rank, as the digits lane keys and `hp` members use (priority 0, most
-- ranks, without formatting a number).
local PRIORITY_0_FIRST, PRIORITY_0_END = 32767 * SEQ_SPAN, 32768 * SEQ_SPAN
local function rank_priority(host_rank)
  if host_rank >= PRIORITY_0_FIRST and host_rank < PRIORITY_0_END then
    return '0'
  end
  return string.format('%d', 32767 - math.floor(host_rank / SEQ_SPAN))
end

-- A number as the digits Redis expects. Numbers handed to redis.call go through this, or are
-- written as digit strings ('0'): Redis 7.0 would format a Lua number with '%.17g', which costs
-- about as much as a small command.
local INT_DIGITS = {}
local function int(x)
  local digits = INT_DIGITS[x]
  if digits then
    return digits
  end
  digits = string.format('%d', x)
  if x > -1024 and x < 1024 then
    INT_DIGITS[x] = digits
  end
  return digits
end

-- Strings known to hold a number (scores Redis returns, digits matched by a pattern, numbers
-- the client formats) are converted with `s + 0`: one string-to-number conversion, where
-- tonumber(s) makes two (it checks, then converts). A malformed one fails the call either way.

-- Abort with a typed error. Only called before a script's first write.
local function fail(code, message)
  error({ err = 'CRAWLQ_' .. code .. ' ' .. message })
end

