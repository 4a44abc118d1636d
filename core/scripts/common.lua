-- crawlq script: common (prelude)
-- protocol: 6
-- flags: prepended to every script (the script's own flags apply)
-- KEYS: 1 the queue's meta key <base>:meta; the other keys are built from the base (ARGV[1])
-- ARGV: 1 key base (prefix of per-host, seen and live keys), 2 call flags and clock: 'r' for a
--       shard reporting to its queue's index, 'c' in a Redis Cluster, then a clock override in
--       ms ('' = server TIME); then the operation's own arguments from ARGV[3] on
-- reply: none; this prelude is prepended to every operation script before it is loaded
-- Shared helpers: record parsing and rebuilding, host lanes, host scheduling, the live set, dead
-- letters, and the checks every script makes before its first write.

local PROTOCOL = 6
-- the same as Redis stores it: compared and written without converting a number
local PROTOCOL_DIGITS = '6'
-- Queues of protocol 2 to 5 are valid queues of protocol 6 (protocol 2: every host has its
-- priority set, every record its attempt count; 2 and 3: every record its host; 4: a queue of
-- several shards tagged <queue>:<shard>; 5: no in-flight counts); they are read as they are and
-- marked 3, 4, 5 or 6 before the first write older clients could not read (own_format).
local OLDER_FORMATS = { ['2'] = true, ['3'] = true, ['4'] = true, ['5'] = true }
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
local function int(x)
  return string.format('%d', x)
end

-- Strings known to hold a number (scores Redis returns, digits matched by a pattern, numbers
-- the client formats) are converted with `s + 0`: one string-to-number conversion, where
-- tonumber(s) makes two (it checks, then converts). A malformed one fails the call either way.

-- Abort with a typed error. Only called before a script's first write.
local function fail(code, message)
  error({ err = 'CRAWLQ_' .. code .. ' ' .. message })
end

-- Check that each listed key is absent or of the expected type ({key, type, key, type, ...}).
-- Scripts call this before their first write for the fixed keys they write and have not read
-- with a typed command yet: a foreign value at a queue key is reported, nothing is changed.
-- Each key is probed with its type's length command, which fails on another type and answers
-- with a number (TYPE answers with a status, which costs a Lua table); TYPE is only asked on a
-- failure, for the message.
local LENGTH_OF = { hash = 'HLEN', zset = 'ZCARD', set = 'SCARD', list = 'LLEN' }
local function expect_types(list)
  for i = 1, #list, 2 do
    local key, expected = list[i], list[i + 1]
    if type(redis.pcall(LENGTH_OF[expected], key)) == 'table' then
      fail('CORRUPT', 'key ' .. key .. ' holds a ' .. redis.call('TYPE', key).ok .. ', expected a ' .. expected)
    end
  end
end

-- The same check for sorted-set keys, in one command: ZINTERCARD type-checks every key it is
-- given before it computes anything, and a key that never exists (the probe) makes the
-- intersection empty at once. Only on a failure are the keys checked one by one, for the
-- message naming the key.
local function expect_zsets(keys)
  local r = redis.pcall('ZINTERCARD', int(#keys + 1), K_PROBE, unpack(keys))
  if type(r) == 'table' and r.err then
    local list = {}
    for _, key in ipairs(keys) do
      list[#list + 1] = key
      list[#list + 1] = 'zset'
    end
    expect_types(list)
    error(r)
  end
end

-- A priority (a number, or the digits of one) as it appears in keys and members: a number
-- concatenated as is would be formatted with '%.14g'.
local function priority_digits(prio)
  if type(prio) == 'string' then
    return prio
  end
  return prio == 0 and '0' or int(prio)
end

-- The number of a priority's digits (from a lane's `hp` member, a rank or the client); most
-- are '0', which needs no conversion.
local function priority_number(digits)
  return digits == '0' and 0 or digits + 0
end

local function lane_key(host, prio)
  return BASE .. ':l:' .. priority_digits(prio) .. ':' .. host
end

local function hp_key(host)
  return BASE .. ':hp:' .. host
end

-- Mark the queue with the protocol a write needs before making it: 3 for a host lane without
-- the host's priority set or a record without its attempt count (protocol 2 clients cannot read
-- them), 4 (the default) for a record without its host (protocol 3 clients cannot). Older
-- clients then refuse the queue instead of losing its hosts or items. The marker only rises; a
-- new queue is marked 4 by its first seed.
local function own_format(digits)
  digits = digits or RECORD_FORMAT
  if STORED_FORMAT ~= PROTOCOL_DIGITS and (not STORED_FORMAT or STORED_FORMAT < digits) then
    -- (a base without a format has no stored split: the call's is the one)
    local split = SPLIT or SPLIT_ASKED
    if not STORED_FORMAT and split > 1 then
      -- a new shard of several: its split is fixed with its first write
      redis.call('HSET', K_META, 'format', digits, 'split', int(split))
    else
      redis.call('HSET', K_META, 'format', digits)
    end
    STORED_FORMAT = digits
  end
end

-- The priorities of a host's lanes, best first. The priority set `hp:<host>` lists them all; a
-- host whose only lane is priority 0 (most hosts) has no set (112 bytes less each), and so does
-- a host with no lanes: both answer '0', whose lane is then read empty.
local function host_priorities(host)
  local prios = redis.call('ZRANGE', hp_key(host), '0', '-1')
  if prios[1] == nil then
    prios[1] = '0'
  end
  return prios
end

-- A host's ready items (the lengths of its lanes) and the number of lanes read.
local function host_ready(host)
  local prios = host_priorities(host)
  local n = 0
  for _, prio in ipairs(prios) do
    n = n + redis.call('LLEN', lane_key(host, prio))
  end
  return n, #prios
end

-- Record layout (fixed field order, see docs/PROTOCOL.md):
-- {"v":1,"id":"<id>","ts":<ms>[,"host":"<host>"][,"priority":<p>][,"attempt":<n>]
--   [,"url":"<url>"][,"key":"<key>"][,"last_error":"<text>"][,"payload":<json>]}
-- (priority and attempt are left out when 0, and host when it is the URL's host: the text
-- between "://" and the next '/' or ':'; protocol 2 wrote "attempt":0 and protocol 3 every
-- host, both still read.)
-- Returns nil for a record that does not have this shape (written by something else); else
-- id, ts, host, priority, attempt, the position after them and whether the host is written.
-- A record's url field and the host its URL spells (what stands between "://" and the next '/'
-- or ':'), anchored where the match starts.
local REC_URL_HOST, REC_HEAD_URL_HOST
do
  local url_host = ',"url":"https?://([^/:"]+)'
  REC_URL_HOST = '^' .. url_host
  REC_HEAD_URL_HOST = '^{"v":1,"id":"([^"]*)","ts":(%d+)()' .. url_host
end
local function rec_head(rec)
  -- most records: priority 0, no failed attempt, the host spelled by the URL (one match)
  local _, e, id, ts, pos, host = string.find(rec, REC_HEAD_URL_HOST)
  if e then
    return id, ts + 0, host, 0, 0, pos, false
  end
  _, e, id, ts = string.find(rec, '^{"v":1,"id":"([^"]*)","ts":(%d+)')
  if not e then
    return nil
  end
  local _, e1, host = string.find(rec, '^,"host":"([^"]*)"', e + 1)
  if e1 then
    e = e1
  end
  local prio, attempt = 0, 0
  local _, e2, p = string.find(rec, '^,"priority":(%-?%d+)', e + 1)
  if e2 then
    prio = p + 0
    e = e2
  end
  local _, e3, a = string.find(rec, '^,"attempt":(%d+)', e + 1)
  if e3 then
    attempt = a + 0
    e = e3
  end
  if e1 then
    return id, ts + 0, host, prio, attempt, e + 1, true
  end
  host = string.match(rec, REC_URL_HOST, e + 1)
  if not host then
    return nil
  end
  return id, ts + 0, host, prio, attempt, e + 1, false
end

-- host_written: false leaves the host out (a record whose URL's host it is).
local function rec_prefix(id, ts, host, host_written, prio, attempt)
  local s = '{"v":1,"id":"' .. id .. '","ts":' .. int(ts)
  if host_written then
    s = s .. ',"host":"' .. host .. '"'
  end
  if prio ~= 0 then
    s = s .. ',"priority":' .. int(prio)
  end
  if attempt ~= 0 then
    s = s .. ',"attempt":' .. int(attempt)
  end
  if not host_written then
    own_format()
  elseif attempt == 0 then
    own_format('3')
  end
  return s
end

-- The position just after the JSON string literal whose contents start at i (escapes skipped),
-- or nil when it does not end.
local function json_string_end(s, i)
  while true do
    local c = string.find(s, '["\\]', i)
    if not c then
      return nil
    end
    if string.sub(s, c, c) == '\\' then
      i = c + 2
    else
      return c + 1
    end
  end
end

-- Rewrite the mutable fields of a record. last_error_json is a JSON string literal, or nil to
-- keep the stored one; payload_json is the new payload's JSON, or nil or '' to keep the stored
-- one. Returns nil when the record cannot be read (the caller keeps it as is).
local function rec_rebuild(rec, ts, attempt, last_error_json, payload_json)
  local id, _, host, prio, _, pos, host_written = rec_head(rec)
  if not id then
    return nil
  end
  local rest = string.sub(rec, pos)
  -- url and key are kept as they are
  local url_part = ''
  local _, e = string.find(rest, '^,"url":"[^"]*"')
  if e then
    url_part = string.sub(rest, 1, e)
    rest = string.sub(rest, e + 1)
  end
  if string.find(rest, '^,"key":"') then
    local after = json_string_end(rest, 9)
    if not after then
      return nil
    end
    url_part = url_part .. string.sub(rest, 1, after - 1)
    rest = string.sub(rest, after)
  end
  local error_part = ''
  if string.find(rest, '^,"last_error":"') then
    local after = json_string_end(rest, 16) -- 16: the first character of the string's contents
    if not after then
      return nil
    end
    error_part = string.sub(rest, 1, after - 1)
    rest = string.sub(rest, after)
  end
  if last_error_json then
    error_part = ',"last_error":' .. last_error_json
  end
  -- the payload is the last field: what is left is either it or the closing brace
  if payload_json and payload_json ~= '' and (rest == '}' or string.find(rest, '^,"payload":')) then
    rest = ',"payload":' .. payload_json .. '}'
  end
  return rec_prefix(id, ts, host, host_written, prio, attempt) .. url_part .. error_part .. rest
end

-- The id (a number) and enqueue time (its digits, as stored) of a record, without parsing the
-- rest. The time stays a string: it is mostly handed straight back to Redis as a score. A record
-- that cannot be read sorts last and counts as queued now, so it is still leased (and then
-- dead-lettered by the client that cannot decode it) instead of failing the call.
local function rec_seq_ts(rec)
  local _, _, id, ts = string.find(rec, '^{"v":1,"id":"(%d+)","ts":(%d+),')
  if not id then
    return SEQ_SPAN - 1, NOW_DIGITS
  end
  return id + 0, ts
end

-- The id of a record as stored, or '?' when it cannot be read.
local function rec_id(rec)
  local _, _, id = string.find(rec, '^{"v":1,"id":"([^"]*)"')
  return id or '?'
end

-- Run a variadic command (HSET, ZADD, ZREM, RPUSH, HDEL, HMGET, ZMSCORE) over a long argument
-- list, in chunks that stay under Lua's unpack limit (about 8,000 values); chunks have an even
-- length, so pairs stay together. Returns the replies of HMGET-like commands concatenated.
local function call_chunked(cmd, key, args)
  local out = {}
  for first = 1, #args, 4000 do
    local r = redis.call(cmd, key, unpack(args, first, math.min(first + 3999, #args)))
    if type(r) == 'table' then
      for _, v in ipairs(r) do
        out[#out + 1] = v
      end
    end
  end
  return out
end

-- Add to a host's item count (hostitems, scored by minus the count so that its ascending order
-- is most items first, then host name); a host holding nothing leaves the set. One ZINCRBY per
-- host: reading every count of a call first (ZMSCORE) and writing them back (ZADD) costs more
-- (each score is formatted and parsed again). The reply is minus the new count: a host left
-- with none (a reply that does not start with '-') is removed.
local function host_items_add(host, delta)
  if delta == 0 then
    return
  end
  local by = delta == 1 and '-1' or delta == -1 and '1' or int(-delta)
  if delta < 0 and string.byte(redis.call('ZINCRBY', K_HOSTITEMS, by, host), 1) ~= 45 then
    redis.call('ZREM', K_HOSTITEMS, host)
  elseif delta > 0 then
    redis.call('ZINCRBY', K_HOSTITEMS, by, host)
  end
end

-- Add to a host's count in hostdelayed or hostdead; a count of 0 is removed.
local function host_count_add(key, host, delta)
  if delta ~= 0 and redis.call('HINCRBY', key, host, int(delta)) <= 0 then
    redis.call('HDEL', key, host)
  end
end

-- Per-host changes gathered over a call and written once per host: tally(t, host, delta), then
-- tally_flush(t, add) with host_items_add or a host_count_add bound to its key.
local function tally(t, host, delta)
  local n = t[host]
  if n == nil then
    t[#t + 1] = host
    n = 0
  end
  t[host] = n + delta
end
local function tally_flush(t, add)
  for _, host in ipairs(t) do
    add(host, t[host])
  end
end

local function add_delayed(host, delta)
  host_count_add(K_HOSTDELAYED, host, delta)
end

local function counter(field, delta)
  if delta ~= 0 then
    redis.call('HINCRBY', K_META, field, int(delta))
  end
end

-- The seen and live sets are split in levels of small integer sets (Redis intsets). Level l has
-- 1024 * 8^l buckets and takes new members until meta.seen reaches 384 per bucket on average,
-- which keeps every bucket under the default set-max-intset-entries (512). Earlier levels are
-- only read, so a level never has to be rehashed. Live members are at most as many as seen ones.
-- A shard of a queue of S shards holds about 1/S of its URLs: its levels have 1/S of the
-- buckets (rounded up; `meta.split` = S, fixed by the shard's first write), so a bucket holds
-- as many members as in a one-shard queue and memory per URL does not grow with S.
local SEEN_BASE_BUCKETS, SEEN_GROWTH, SEEN_FILL, SEEN_MAX_LEVEL = 1024, 8, 384, 7

-- The bucket count of each level for this call's split (set by begin, made when it changes).
local LEVEL_SIZE, LEVEL_SPLIT = {}, nil
local function size_levels(split)
  if split ~= LEVEL_SPLIT then
    LEVEL_SPLIT = split
    for l = 0, SEEN_MAX_LEVEL do
      LEVEL_SIZE[l] = math.ceil(SEEN_BASE_BUCKETS * SEEN_GROWTH ^ l / split)
    end
  end
end

-- The split of a shard whose call passed one, read once per call, when the seen or live set
-- is first used (most calls of a one-shard queue never read it: a missing field costs a scan
-- of the meta hash).
local function resolve_split()
  if not SPLIT then
    SPLIT = tonumber(redis.call('HGET', K_META, 'split')) or (STORED_FORMAT and 1) or SPLIT_ASKED
    size_levels(SPLIT)
  end
end

local function level_buckets(level)
  resolve_split()
  return LEVEL_SIZE[level]
end

-- The level new members go to when the queue has seen `seen` items, and the seen count at which
-- the next level starts.
local function current_level(seen)
  resolve_split()
  local level, level_end = 0, level_buckets(0) * SEEN_FILL
  while seen >= level_end and level < SEEN_MAX_LEVEL do
    level = level + 1
    level_end = level_end + level_buckets(level) * SEEN_FILL
  end
  return level, level_end
end

-- The digits of bucket numbers below 2^16 (the first two levels), each made once: in a
-- functions library this table lives as long as the library, so a bucket's digits are formatted
-- once per server instead of once per item (a few µs per seeded URL in all).
local BUCKET_DIGITS = {}
local function bucket_digits(bucket)
  local digits = BUCKET_DIGITS[bucket]
  if not digits then
    digits = int(bucket)
    if bucket < 65536 then
      BUCKET_DIGITS[bucket] = digits
    end
  end
  return digits
end

-- The digits of consecutive whole numbers (a seed's record ids, a lease's tokens) without a
-- string.format for each (about 2.5k instructions): the digits of n / 1000, formatted when they
-- change (`state` keeps them), and the last three digits from ID_SUFFIX, made once each
-- (ID_SUFFIX[k] for k < 1000 is k's digits, for a number below 1000; ID_SUFFIX[1000 + k] the
-- same with leading zeros). Returns the two parts, to be concatenated by the caller with the
-- rest of its string.
local ID_SUFFIX = {}
-- k's digits (0 <= k < 1000), with leading zeros to three when padded
local function three_digits(k, padded)
  local at = padded and k + 1000 or k
  local suffix = ID_SUFFIX[at]
  if not suffix then
    suffix = padded and string.format('%03d', k) or int(k)
    ID_SUFFIX[at] = suffix
  end
  return suffix
end
local function number_digits(state, n)
  local thousands = math.floor(n / 1000)
  local k = n - thousands * 1000
  if k < 0 or k > 999 then
    -- (a quotient rounded up: only for numbers far past any id or token)
    return int(n), ''
  end
  if thousands ~= state[1] then
    state[1], state[2] = thousands, thousands > 0 and int(thousands) or ''
  end
  local suffix = ID_SUFFIX[thousands > 0 and k + 1000 or k]
  return state[2], suffix or three_digits(k, thousands > 0)
end

-- The bucket keys of one level of the seen set (`prefixes` SEEN_PREFIX, kind 's') or of the live
-- set (LIVE_PREFIX, 'v'): a table of bucket number -> key, with the level's prefix and size.
-- In a functions library the table lives with the library, so a bucket's key is built once
-- per server instead of once per item (about 1k instructions each, two per seeded URL). At
-- most KEY_CACHE_MAX keys are kept in all (about 3 MB of the functions' Lua memory: levels 0
-- and 1 of a queue are 18,432 keys); past that, keys are built on every use until a queue not
-- seen yet starts the tables again (begin).
local KEY_CACHE_MAX, key_cache_left = 32768, 32768
local function level_keys(prefixes, kind, level)
  resolve_split()
  local keys = prefixes[level]
  if not keys or keys.size ~= LEVEL_SIZE[level] then
    keys = { prefix = BASE .. ':' .. kind .. ':' .. int(level) .. ':', size = LEVEL_SIZE[level] }
    prefixes[level] = keys
  end
  return keys
end

-- The key of bucket number `bucket` of a level's key table (from level_keys).
local function bucket_key(keys, bucket)
  local key = keys.prefix .. bucket_digits(bucket)
  if key_cache_left > 0 then
    keys[bucket] = key
    key_cache_left = key_cache_left - 1
  end
  return key
end

-- The key of a bucket of the seen set (`prefixes` SEEN_PREFIX, kind 's') or of the live set
-- (LIVE_PREFIX, 'v') at a level. (`%`, a Lua operator, rather than math.fmod, a C function:
-- the same for these non-negative whole numbers.)
local function set_key(prefixes, kind, level, bucket_hash)
  local keys = level_keys(prefixes, kind, level)
  local bucket = bucket_hash % keys.size
  return keys[bucket] or bucket_key(keys, bucket)
end

local function seen_key(level, bucket_hash)
  return set_key(SEEN_PREFIX, 's', level, bucket_hash)
end

local function live_key(level, bucket_hash)
  return set_key(LIVE_PREFIX, 'v', level, bucket_hash)
end

-- Remove a live member (the item was acked or dead-lettered). It sits at the level that was
-- current when it was added: look from the current level down.
local function live_remove(member, bucket_hash, top_level)
  for l = top_level, 0, -1 do
    -- (a bucket holding a foreign value holds no member: it is passed over, nothing changes)
    if redis.pcall('SREM', live_key(l, bucket_hash), member) == 1 then
      return
    end
  end
end

local function seen_count()
  return tonumber(META[4] or '0')
end

-- The identity of a stored record (its key, else its URL, else its host key), unescaped; nil
-- when the record cannot be read.
local function rec_identity(rec)
  local id, _, host, _, _, pos = rec_head(rec)
  if not id then
    return nil
  end
  local identity = host
  local k = pos - 1
  local _, e, url = string.find(rec, '^,"url":"([^"]*)"', pos)
  if e then
    identity = string.gsub(url, '\\\\', '\\')
    k = e
  end
  -- a key follows the url, or the head fields of a host item; it holds no control
  -- characters, so its only escapes are \" and \\
  if string.sub(rec, k + 1, k + 8) == ',"key":"' then
    k = k + 1
    local after = json_string_end(rec, k + 8)
    if after then
      identity = string.gsub(string.sub(rec, k + 8, after - 2), '\\(.)', '%1')
    end
  end
  return identity
end

-- The live member of a stored record, computed here where no client is involved (reclaim,
-- nack, dead letters): SHA-1 of the item's identity. Member: the first 13 hex digits (52 bits,
-- exact in a Lua number); bucket hash: the next 8.
local function rec_live(rec)
  local identity = rec_identity(rec)
  if not identity then
    return nil
  end
  local h = redis.sha1hex(identity)
  return int(tonumber(string.sub(h, 1, 13), 16)), tonumber(string.sub(h, 14, 21), 16)
end

local function live_remove_rec(rec, top_level)
  local member, bucket = rec_live(rec)
  if member then
    live_remove(member, bucket, top_level)
  end
end

-- Whether an item is queued or leased now: its live member is in some level's live set. nil
-- and the error when a bucket holds a foreign value.
local function is_live(member, bucket_hash, top_level)
  for l = 0, top_level do
    local r = redis.pcall('SISMEMBER', live_key(l, bucket_hash), member)
    if r == 1 then
      return true
    elseif type(r) == 'table' then
      return nil, r
    end
  end
  return false
end

-- Add a stored record's item to the live set; false (nothing added) when it is live already
-- (a forced seed queued it again meanwhile), its record cannot be read or its bucket holds a
-- foreign value.
local function live_add_rec(rec)
  local member, bucket = rec_live(rec)
  if not member then
    return false
  end
  local level = current_level(seen_count())
  if is_live(member, bucket, level) ~= false then
    return false
  end
  return redis.pcall('SADD', live_key(level, bucket), member) == 1
end

-- The member of a lane in `heads`: the host for priority 0 (most lanes), else
-- '<priority>:<host>'. Every non-empty lane has one, scored by its head's enqueue time.
local function head_member(host, prio)
  if prio == 0 or prio == '0' then
    return host
  end
  return priority_digits(prio) .. ':' .. host
end

-- The rank of the head of a host's best lane (its highest priority), or nil when the host has
-- no ready items. O(log P) in the host's priorities: only the top lane is read. A priority
-- listed without a lane (defensive: no script leaves one) is dropped on the way; a set left with
-- priority 0 alone goes (the lane itself says it is there). lane0_empty: the caller
-- has just seen the host's priority-0 lane empty (no read of it when the set is absent).
local function host_best(host, lane0_empty)
  local hp = hp_key(host)
  while true do
    local top = redis.call('ZRANGE', hp, '0', '1')
    local prio = top[1]
    if not prio then
      if lane0_empty then
        return nil
      end
      local head = redis.call('LINDEX', lane_key(host, 0), '0')
      return head and rank(0, (rec_seq_ts(head)))
    end
    local head = redis.call('LINDEX', lane_key(host, prio), '0')
    if head then
      if prio == '0' and not top[2] then
        own_format('3')
        redis.call('ZREM', hp, '0')
      end
      return rank(priority_number(prio), (rec_seq_ts(head)))
    end
    redis.call('ZREM', hp, prio)
  end
end

-- List a new lane of a host in its priority set, creating the set only for a priority other
-- than 0 (with 0 in it too when the host's priority-0 lane holds items). Returns whether the
-- host had no ready items before (no set, and no priority-0 lane other than a new one), and
-- what undoes the listing ('set': the set was created; else the member added, or nil); nil,
-- with nothing written, when the set holds a foreign value (ZCARD tells that and whether the
-- set is there, in one command).
local function host_lane_added(host, prio)
  local hp = hp_key(host)
  local listed = redis.pcall('ZCARD', hp)
  if type(listed) == 'table' then
    return nil
  end
  if listed > 0 then
    if prio == 0 then
      redis.call('ZADD', hp, '0', '0')
      return false, '0'
    end
    redis.call('ZADD', hp, int(-prio), int(prio))
    return false, int(prio)
  end
  if prio == 0 then
    own_format('3')
    return true
  end
  if redis.call('EXISTS', lane_key(host, 0)) == 1 then
    redis.call('ZADD', hp, int(-prio), int(prio), '0', '0')
    return false, 'set'
  end
  redis.call('ZADD', hp, int(-prio), int(prio))
  return true, 'set'
end

-- Append (or, with at_front, prepend) a record to its host lane and keep the host's
-- scheduling, the lane's head age and the ready/hosts counters right. Returns the record's host,
-- or false (and changes nothing) for a record that cannot be read, or whose host's lane or
-- priority set holds a foreign value (another program wrote it): the caller dead-letters it
-- instead, so no item is lost and no call fails half-way.
local function enqueue_ready(rec, at_front)
  local id, ts, host, prio = rec_head(rec)
  if not id then
    return false
  end
  local lane = lane_key(host, prio)
  local len = redis.pcall(at_front and 'LPUSH' or 'RPUSH', lane, rec)
  if type(len) == 'table' then
    return false
  end
  local new_host, listing = false, nil
  if len == 1 then
    -- a new lane
    new_host, listing = host_lane_added(host, prio)
    if new_host == nil then
      redis.call('UNLINK', lane)
      return false
    end
  end
  if at_front or len == 1 then
    -- this record is now the head of its lane: its age and the host's rank follow it
    local best
    if not redis.call('ZSCORE', K_WAIT, host) then
      local ok, rank_or_error = pcall(host_best, host)
      if not ok then
        -- another lane of the host holds a foreign value: the record and a new lane's listing
        -- are taken back
        redis.call(at_front and 'LPOP' or 'RPOP', lane)
        if listing == 'set' then
          redis.call('UNLINK', hp_key(host))
        elseif listing then
          redis.call('ZREM', hp_key(host), listing)
        end
        return false
      end
      best = rank_or_error
    end
    redis.call('ZADD', K_HEADS, int(ts), head_member(host, prio))
    if best then
      redis.call('ZADD', K_READY, int(best), host)
    end
  end
  if new_host then
    counter('hosts', 1)
  end
  counter('ready', 1)
  return host
end

local function to_dead(id, rec)
  redis.call('ZADD', K_DEAD, NOW_DIGITS, id)
  redis.call('HSET', K_DEADREC, id, rec)
  counter('dead_total', 1)
  local _, _, host = rec_head(rec)
  if host then
    host_count_add(K_HOSTDEAD, host, 1)
  end
end

-- Wake blocked lease calls (BLPOP on the wake key). Markers are capped and expire, so a queue
-- nobody waits on does not accumulate them.
local function wake(n)
  if n > 0 then
    local m = math.min(n, 32)
    local marks = {}
    for i = 1, m do
      marks[i] = '1'
    end
    redis.call('LPUSH', K_WAKE, unpack(marks))
    redis.call('LTRIM', K_WAKE, '0', '31')
    redis.call('PEXPIRE', K_WAKE, '30000')
  end
end

-- Make a host leasable now (it left `wait`): into `ready` at its best head's rank if it has
-- ready items, waking blocked lease calls. Returns whether it had any.
local function ready_now(host)
  local best = host_best(host)
  if best then
    redis.call('ZADD', K_READY, int(best), host)
    wake(1)
  end
  return best ~= nil
end

-- Hold a host whose lane or priority set holds a foreign value (another program wrote it), as a
-- pause until resumed: leases go on with the other hosts and nothing of it is touched. Resuming
-- it once the key is repaired makes it leasable again (while the value is there, a resume
-- answers CORRUPT and changes nothing).
local function hold_corrupt_host(host)
  redis.call('ZREM', K_READY, host)
  redis.call('ZADD', K_WAIT, int(PAUSED_FOREVER), host)
  redis.pcall('HSET', K_HOSTPAUSE, host, int(PAUSED_FOREVER) .. ':')
end

-- Put a host that left `wait` into `ready` at its best head's rank, if it has ready items; a
-- host whose lane or priority set holds a foreign value is held instead.
local function ready_at_rank(host)
  local ok, best = pcall(host_best, host)
  if not ok then
    hold_corrupt_host(host)
  elseif best then
    redis.call('ZADD', K_READY, int(best), host)
  end
end

-- Politeness delay of a host in ms: per-host override or the caller's default, plus the adaptive
-- extra that rate-limited nacks build up.
local function host_delay(host, default_delay, any_override, any_adaptive)
  local d = default_delay
  if any_override then
    local o = redis.call('HGET', K_HOSTDELAY, host)
    if o then
      d = tonumber(o) or d
    end
  end
  if any_adaptive then
    local a = redis.call('HGET', K_ADAPTIVE, host)
    if a then
      d = d + (tonumber(a) or 0)
    end
  end
  return d
end

-- In-flight limits (docs/PROTOCOL.md section 3, "In flight"). A lease call starts with the
-- workers' default limit (digits, '0' or absent: none) and their pacing ('<mode>:<factor>:<max
-- ms>', mode 'lease' or 'answer'; absent: 'lease'); whether any host has its own limit or mode
-- is read once. Returns whether any lease of this call may count.
function FLIGHT.start(default_digits, pacing)
  FLIGHT.default = tonumber(default_digits or '0') or 0
  FLIGHT.overrides = redis.call('HLEN', FLIGHT.limits) > 0
  FLIGHT.paced_hosts = redis.call('HLEN', FLIGHT.pacing) > 0
  -- (a string.byte for the common call: 'a' is 97)
  FLIGHT.answer_default = pacing ~= nil and string.byte(pacing, 1) == 97
  if FLIGHT.answer_default or FLIGHT.paced_hosts then
    local _, factor, max = string.match(pacing or '', '^(%a+):([%d.]*):(%d*)$')
    FLIGHT.factor, FLIGHT.delay_max = factor or '0', max or '0'
  end
  if FLIGHT.default > 0 or FLIGHT.overrides or FLIGHT.answer_default or FLIGHT.paced_hosts then
    expect_types({ FLIGHT.counts, 'hash', FLIGHT.full, 'hash', K_HOSTPAUSE, 'hash', FLIGHT.answers, 'hash' })
    return true
  end
  return false
end

-- The in-flight limit of a host in force for a lease call (0: none).
function FLIGHT.limit(host)
  if FLIGHT.overrides then
    local own = redis.call('HGET', FLIGHT.limits, host)
    if own then
      return tonumber(own) or 0
    end
  end
  return FLIGHT.default
end

-- The delay factor (digits) of a host whose next lease waits after the answer, for a lease
-- call; nil for a host paced after the lease.
function FLIGHT.pace(host)
  local mode = FLIGHT.answer_default and 'answer' or nil
  if FLIGHT.paced_hosts then
    mode = redis.call('HGET', FLIGHT.pacing, host) or mode
  end
  if not mode or string.byte(mode, 1) ~= 97 then
    return nil
  end
  return string.match(mode, '^answer:([%d.]+)$') or FLIGHT.factor
end

-- An item of a host was leased (after FLIGHT.start): under a limit it is counted, and a host
-- that now has as many items leased as its limit allows is held in `wait` until an answer
-- frees a slot, `due` (when its politeness delay lets it be leased again) kept in hostfull.
-- A host paced after the answer has a limit of at least 1, and its answers learn its delay,
-- factor and max from hostanswer. Returns whether the host is held.
function FLIGHT.leased(host, due)
  local limit = FLIGHT.limit(host)
  local factor = (FLIGHT.answer_default or FLIGHT.paced_hosts) and FLIGHT.pace(host)
  if factor then
    if limit <= 0 then
      limit = 1
    end
    redis.call('HSET', FLIGHT.answers, host, int(due - NOW) .. ':' .. factor .. ':' .. FLIGHT.delay_max)
  end
  if limit <= 0 then
    return false
  end
  -- protocol 5 clients would neither count their leases nor free the slots of their answers
  own_format(PROTOCOL_DIGITS)
  if redis.call('HINCRBY', FLIGHT.counts, host, '1') < limit then
    return false
  end
  -- (the lease popped the host from `ready`)
  redis.call('HSET', FLIGHT.full, host, int(due))
  redis.call('ZADD', K_WAIT, int(PAUSED_FOREVER), host)
  return true
end

-- A host held full may be leased again: at `due` (its politeness time) or now. A paused host
-- stays paused: its pause's remembered hold becomes `due`. Blocked lease calls are woken, and
-- the call reports the time (FLIGHT.freed_at).
function FLIGHT.unhold(host, due)
  redis.call('HDEL', FLIGHT.full, host)
  local entry = redis.call('HGET', K_HOSTPAUSE, host)
  if entry then
    local ends = tonumber(string.match(entry, '^(%d+):')) or PAUSED_FOREVER
    redis.call('HSET', K_HOSTPAUSE, host, int(ends) .. ':' .. (due > NOW and int(due) or ''))
    redis.call('ZADD', K_WAIT, int(math.max(ends, due)), host)
    return
  end
  if due > NOW then
    redis.call('ZADD', K_WAIT, int(due), host)
  else
    due = NOW
    redis.call('ZREM', K_WAIT, host)
    ready_at_rank(host)
  end
  wake(1)
  if not FLIGHT.freed_at or due < FLIGHT.freed_at then
    FLIGHT.freed_at = due
  end
end

-- Whether any host has items counted in flight: the answering scripts (ack, nack, release,
-- the reclaim of expired leases) read it once per call and call FLIGHT.answered only then.
function FLIGHT.any()
  if redis.call('HLEN', FLIGHT.counts) > 0 then
    expect_types({ FLIGHT.full, 'hash', K_HOSTPAUSE, 'hash', K_READY, 'zset', K_WAIT, 'zset', K_WAKE, 'list',
      FLIGHT.answers, 'hash' })
    FLIGHT.answering = redis.call('HLEN', FLIGHT.answers) > 0
    return true
  end
  return false
end

-- When a host paced after the answer may be leased again after one of its items, leased with
-- `lease_key` ('<token>:<id>'; the token is at least its lease time in microseconds), is
-- answered now: its delay after now (the delay of the lease, or the host's own delay now when
-- longer), or factor x how long the item was leased, within the delay and the max (0: no
-- max). nil for a host paced after the lease.
function FLIGHT.after_answer(host, lease_key)
  local pace = redis.call('HGET', FLIGHT.answers, host)
  if not pace then
    return nil
  end
  local delay, factor, max = string.match(pace, '^(%d+):([%d.]*):(%d*)$')
  local wait = tonumber(delay) or 0
  -- a delay set for the host since the lease (an operator's, a robots.txt Crawl-delay read
  -- while the item was out) counts when it is longer
  local own = redis.call('HGET', K_HOSTDELAY, host)
  if own then
    own = (tonumber(own) or 0) + (tonumber(redis.call('HGET', K_ADAPTIVE, host) or '0') or 0)
    if own > wait then
      wait = own
    end
  end
  factor = tonumber(factor) or 0
  local token = factor > 0 and tonumber(string.match(lease_key or '', '^(%d+):'))
  if token then
    local scaled = math.floor(factor * math.max(NOW - math.floor(token / 1000), 0))
    max = tonumber(max) or 0
    if max > 0 and scaled > max then
      scaled = max
    end
    if scaled > wait then
      wait = scaled
    end
  end
  return NOW + wait
end

-- Hold a host that is not held full in `wait` until `at` at least (a paused host: its pause's
-- remembered hold); a host held longer already is left as it is.
function FLIGHT.hold_until(host, at)
  if at <= NOW then
    return
  end
  local entry = redis.call('HGET', K_HOSTPAUSE, host)
  if entry then
    local ends, hold = string.match(entry, '^(%d+):(%d*)$')
    ends, hold = tonumber(ends) or PAUSED_FOREVER, tonumber(hold) or 0
    if hold < at then
      redis.call('HSET', K_HOSTPAUSE, host, int(ends) .. ':' .. int(at))
      redis.call('ZADD', K_WAIT, int(math.max(ends, at)), host)
    end
    return
  end
  local score = redis.call('ZSCORE', K_WAIT, host)
  if score and score + 0 >= at then
    return
  end
  redis.call('ZREM', K_READY, host)
  redis.call('ZADD', K_WAIT, int(at), host)
end

-- `n` items of a host were answered (acked, nacked, released, taken back on expiry), the
-- last leased with `lease_key`: its count goes down (an item leased while no limit applied
-- was never counted: the count stops at 0) and a host held full may be leased again; a host
-- paced after the answer is held until its delay after this answer.
function FLIGHT.answered(host, n, lease_key)
  local left = redis.call('HINCRBY', FLIGHT.counts, host, int(-n))
  local after = FLIGHT.answering and FLIGHT.after_answer(host, lease_key)
  if left <= 0 then
    redis.call('HDEL', FLIGHT.counts, host)
    if after then
      redis.call('HDEL', FLIGHT.answers, host)
    end
  end
  local due = redis.call('HGET', FLIGHT.full, host)
  if due then
    due = tonumber(due) or NOW
    FLIGHT.unhold(host, after and after > due and after or due)
  elseif after then
    FLIGHT.hold_until(host, after)
  end
end

-- The id in a lease key '<token>:<id>'.
local function lease_key_id(lease_key)
  local _, _, id = string.find(lease_key, '^%d+:(.*)$')
  return id or '?'
end

-- Take back expired leases (their keys, read by the caller from `leased`). Each goes back to
-- the end of its lane, or to dead letters once max_attempts is reached (or when its record
-- cannot be read). Range removals and chunked multi-member calls keep any number of them under
-- Lua's unpack limit. Returns requeued, died. The caller has checked the types of the keys
-- it writes besides `leased` and `leases`: dead, deadrec, ready, wait and heads.
local function reclaim_leases(lease_keys, max_attempts)
  if #lease_keys == 0 then
    return 0, 0
  end
  local recs = call_chunked('HMGET', K_LEASES, lease_keys)
  local flights = FLIGHT.any()
  redis.call('ZREMRANGEBYRANK', K_LEASED, '0', int(#lease_keys - 1))
  call_chunked('HDEL', K_LEASES, lease_keys)
  local requeued, died = 0, 0
  local level
  for i, lease_key in ipairs(lease_keys) do
    local rec = recs[i]
    if rec then
      local _, _, host, _, attempt = rec_head(rec)
      if flights and host then
        FLIGHT.answered(host, 1, lease_key)
      end
      local fresh = attempt and rec_rebuild(rec, NOW, attempt + 1, '"lease expired"')
      if fresh and attempt + 1 < max_attempts and enqueue_ready(fresh, false) then
        requeued = requeued + 1
      else
        level = level or current_level(seen_count())
        live_remove_rec(rec, level)
        to_dead(lease_key_id(lease_key), fresh or rec)
        died = died + 1
      end
    end
  end
  counter('reclaimed_total', #lease_keys)
  return requeued, died
end

-- What a lease call does before it leases (each part only when it has something to do): the
-- expired leases in `expired` are taken back (reclaim_leases); the due delayed records in
-- `due_items` (the first of `delayed`) join their lanes, a record that cannot be queued (one no
-- script can read, or whose lane holds a foreign value) going to dead letters; the due hosts in
-- `due_hosts` (the first of `wait`) become leasable, their timed pauses forgotten (any_paused),
-- a host whose priority set or lane holds a foreign value held instead. any_revisits: some
-- records are scheduled revisits (their ids leave `revisits`). Returns requeued and dead-lettered
-- expired leases. The caller has checked the types of the keys this writes.
local function promote_due(expired, due_items, due_hosts, max_attempts, any_paused, any_revisits)
  local reclaimed, reclaimed_dead = reclaim_leases(expired, max_attempts)
  if #due_items > 0 then
    redis.call('ZREMRANGEBYRANK', K_DELAYED, '0', int(#due_items - 1))
    if any_revisits then
      local ids = {}
      for i, rec in ipairs(due_items) do
        ids[i] = rec_id(rec)
      end
      call_chunked('SREM', K_REVISITS, ids)
    end
    local level
    local promoted = {}
    for _, rec in ipairs(due_items) do
      local host = enqueue_ready(rec, false)
      if host then
        tally(promoted, host, -1)
      else
        local _, _, readable_host = rec_head(rec)
        if readable_host then
          tally(promoted, readable_host, -1)
        end
        level = level or current_level(seen_count())
        live_remove_rec(rec, level)
        to_dead(rec_id(rec), rec)
      end
    end
    tally_flush(promoted, add_delayed)
  end
  if #due_hosts > 0 then
    redis.call('ZREMRANGEBYRANK', K_WAIT, '0', int(#due_hosts - 1))
    if any_paused then
      call_chunked('HDEL', K_HOSTPAUSE, due_hosts)
    end
    for _, host in ipairs(due_hosts) do
      ready_at_rank(host)
    end
  end
  return reclaimed, reclaimed_dead
end

-- The earliest score of a time-ordered set, or nil when it is empty.
local function earliest_score(key)
  local first = redis.call('ZRANGE', key, '0', '0', 'WITHSCORES')
  return first[2] and first[2] + 0
end

-- Whether a time (ms, or nil for none) has come.
local function due_at(at)
  return at and at <= NOW
end

-- The earliest of the earliest scores of `leased`, `delayed` and `wait` (each nil when its set
-- is empty): the time (ms) at which an expiring lease, a delayed item or a held-back host can
-- change what is leasable, or -1. A host paused until resumed never comes due.
local function earliest_due(lease_at, item_at, host_at)
  local due = -1
  for _, at in ipairs({ lease_at or -1, item_at or -1, host_at or -1 }) do
    if at >= 0 and at < PAUSED_FOREVER and (due < 0 or at < due) then
      due = at
    end
  end
  return due
end

-- The same, read now.
local function next_due()
  return earliest_due(earliest_score(K_LEASED), earliest_score(K_DELAYED), earliest_score(K_WAIT))
end

-- A shard's report to its queue's index of shards with work (docs/PROTOCOL.md section 9), made
-- only with the call flag 'r': two more elements at the end of the reply, the shard's epoch
-- (meta.ep, raised by one for each report) and a time (ms). reported(out, at): `at` is the
-- earliest time something this call added or moved becomes leasable (-1 and epoch 0: nothing
-- earlier than before; the index is only ever lowered by it). reported_state(out, at): the
-- shard's whole state after the call, `at` being when something is next leasable (now with a
-- host ready; the earliest expiring lease, delayed item or held host otherwise; -1 with nothing
-- queued or leased), or the given `at` (a paused shard's end of pause).
local function reported(out, at)
  if FLIGHT.freed_at and (at < 0 or FLIGHT.freed_at < at) then
    at = FLIGHT.freed_at
  end
  if REPORT then
    if at >= 0 then
      out[#out + 1] = redis.call('HINCRBY', K_META, 'ep', '1')
      out[#out + 1] = at
    else
      out[#out + 1] = 0
      out[#out + 1] = -1
    end
  end
  return out
end

local function reported_state(out, at)
  if REPORT then
    if not at then
      at = redis.call('ZCARD', K_READY) > 0 and NOW or next_due()
    end
    out[#out + 1] = redis.call('HINCRBY', K_META, 'ep', '1')
    out[#out + 1] = at
  end
  return out
end

-- Start a call: take its keys and arguments, refuse a queue of another format, fix the clock.
-- Returns an error reply to send back as is, or nil.
-- The keys a call builds from its base: the fixed keys after meta, the keys of section 1's
-- second table, the cluster probe, and the seen- and live-set bucket keys by level. In a
-- functions library this table outlives the call, so a queue's key names are built once per
-- server instead of once per call: each name passed in KEYS or concatenated costs about 0.7k
-- instructions, 21 of them 15-20% of an empty lease. Only names derived from the base are kept;
-- a server with more queues than the bound, or whose queues have used up the bucket keys'
-- bound, starts the table again when a queue it does not hold comes.
local BASE_KEYS, BASE_KEYS_COUNT, BASE_KEYS_MAX = {}, 0, 1024
-- Each key by its name, the suffix after `<base>:` (keys.rs's FIXED_KEYS after meta, and the
-- per-host hashes of section 1; core/tests/surfaces.rs checks this list against both).
local BASE_KEY_NAMES = {
  'ready', 'wait', 'heads', 'delayed', 'leased', 'leases', 'dead', 'deadrec', 'hostdelay',
  'adaptive', 'wake', 'hostpause', 'hostbudget', 'hostused', 'revisits', 'hostitems',
  'hostdelayed', 'hostdead', 'probe', 'hostdeleting', 'hostlimit', 'hostflight', 'hostfull',
  'hostpacing', 'hostanswer',
}

local function base_keys(base)
  local named = BASE_KEYS[base]
  if not named then
    named = {}
    for _, name in ipairs(BASE_KEY_NAMES) do
      named[name] = base .. ':' .. name
    end
    -- the seen- and live-set bucket keys, by level, built as they are used
    named.seen, named.live = {}, {}
    if BASE_KEYS_COUNT >= BASE_KEYS_MAX or key_cache_left <= 0 then
      BASE_KEYS, BASE_KEYS_COUNT, key_cache_left = {}, 0, KEY_CACHE_MAX
    end
    BASE_KEYS[base], BASE_KEYS_COUNT = named, BASE_KEYS_COUNT + 1
  end
  return named
end

-- KEYS[1] is the queue's meta key (it routes the call in a Cluster); ARGV[1] is the base.
local function begin(keys, argv)
  -- (in a library, once: the runtime API and libraries stay the same from call to call)
  if not string then
    redis, string, math, table, tonumber, type, unpack, ipairs, select = runtime_globals()
  end
  K_META = keys[1]
  -- The key names follow the base: set again only when it is not the last call's (most
  -- servers hold one queue; in a library these names outlive the call).
  local base = argv[1]
  if base ~= BASE then
    BASE = base
    local named = base_keys(base)
    K_READY, K_WAIT, K_HEADS, K_DELAYED = named.ready, named.wait, named.heads, named.delayed
    K_LEASED, K_LEASES, K_DEAD, K_DEADREC = named.leased, named.leases, named.dead, named.deadrec
    K_HOSTDELAY, K_ADAPTIVE, K_WAKE = named.hostdelay, named.adaptive, named.wake
    K_HOSTPAUSE, K_HOSTBUDGET, K_HOSTUSED = named.hostpause, named.hostbudget, named.hostused
    K_REVISITS, K_HOSTITEMS, K_HOSTDELAYED = named.revisits, named.hostitems, named.hostdelayed
    K_HOSTDEAD, K_PROBE, K_HOSTDELETING = named.hostdead, named.probe, named.hostdeleting
    FLIGHT.limits, FLIGHT.counts, FLIGHT.full = named.hostlimit, named.hostflight, named.hostfull
    FLIGHT.pacing, FLIGHT.answers = named.hostpacing, named.hostanswer
    SEEN_PREFIX, LIVE_PREFIX = named.seen, named.live
  end

  -- Also the first typed read of meta: a foreign value there fails here, before any write.
  META = redis.call('HMGET', K_META, 'format', 'paused', 'token', 'seen')
  STORED_FORMAT = META[1]
  if STORED_FORMAT and STORED_FORMAT ~= PROTOCOL_DIGITS and not OLDER_FORMATS[STORED_FORMAT]
    and tonumber(STORED_FORMAT) ~= PROTOCOL then
    return redis.error_reply('CRAWLQ_PROTOCOL queue was written with format ' .. STORED_FORMAT
      .. '; this client speaks format ' .. PROTOCOL)
  end

  -- argv[2]: 's' + S + '.' for a shard of a queue of S shards whose seen set is split (new
  -- shards only: a written base keeps the split its meta has), 'r' for a shard that reports
  -- to its queue's index, 'c' when Redis is a cluster, then the fixed clock's digits when one
  -- is pinned.
  local clock = argv[2]
  -- (one string.byte for a call without flags, the most common: a letter is above '9')
  local flag = string.byte(clock, 1)
  SPLIT, REPORT, FLIGHT.freed_at = 1, false, nil
  if flag and flag > 57 then
    if flag == 115 then
      local dot = string.find(clock, '.', 2, true)
      SPLIT_ASKED = tonumber(string.sub(clock, 2, dot - 1))
      clock = string.sub(clock, dot + 1)
      SPLIT = nil
      flag = string.byte(clock, 1)
    end
    if flag == 114 then
      -- 'r': a shard of several, reporting to its queue's index (reported() above)
      REPORT = true
      clock = string.sub(clock, 2)
      flag = string.byte(clock, 1)
    end
    if flag == 99 then
      -- In a cluster a script may touch keys it did not declare (every key but meta) only
      -- while its slot is not being migrated: mid-move, some of the queue's keys are on each
      -- node. This probe fails before any write while the slot is migrating or importing (the
      -- client retries after the move). On the node the slot leaves, a key that never exists
      -- is enough; on the node it goes to, a call redirected there (ASKING) may touch a
      -- missing key alone, so the probe names two keys, one of them missing, which Redis
      -- refuses there (TRYAGAIN).
      redis.call('EXISTS', K_PROBE, K_META)
      clock = string.sub(clock, 2)
    end
  end
  if SPLIT == 1 and LEVEL_SPLIT ~= 1 then
    size_levels(1)
  end
  if clock ~= '' then
    NOW = tonumber(clock)
    NOW_US = NOW * 1000
    NOW_DIGITS = int(NOW)
  else
    local t = redis.call('TIME')
    local s, us = t[1] + 0, t[2] + 0
    local ms = math.floor(us / 1000)
    NOW = s * 1000 + ms
    NOW_US = s * 1000000 + us
    -- the seconds' digits as Redis wrote them and the milliseconds' three: no string.format
    NOW_DIGITS = t[1] .. three_digits(ms, true)
  end
  return nil
end

-- A reading of several shards of one queue in one call (docs/PROTOCOL.md section 9,
-- "Readings"): `part` (an operation's code as a function of ARGV, which reads the base begin
-- last set up) on the call's own base, then on each base given in argv from argv[3] on; the
-- replies in that order, or the first base's begin error.
local function read_bases(part, argv)
  local replies = { part(argv) }
  for i = 3, #argv do
    local base = argv[i]
    local begin_error = begin({ base .. ':meta' }, { base, argv[2] })
    if begin_error then
      return begin_error
    end
    replies[#replies + 1] = part(argv)
  end
  return replies
end
