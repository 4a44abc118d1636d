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
-- (one table, not three names: the largest script is near Lua's 200 locals per chunk)
local BASE_KEYS = { by_base = {}, count = 0, max = 1024 }
-- Each key by its name, the suffix after `<base>:` (keys.rs's FIXED_KEYS after meta, and the
-- per-host hashes of section 1; core/tests/surfaces.rs checks this list against both).
local BASE_KEY_NAMES = {
  'ready', 'wait', 'heads', 'delayed', 'leased', 'leases', 'dead', 'deadrec', 'hostdelay',
  'adaptive', 'wake', 'hostpause', 'hostbudget', 'hostused', 'revisits', 'hostitems',
  'hostdelayed', 'hostdead', 'probe', 'hostdeleting', 'hostlimit', 'hostflight', 'hostfull',
  'hostpacing', 'hostanswer',
}

local function base_keys(base)
  local named = BASE_KEYS.by_base[base]
  if not named then
    named = {}
    for _, name in ipairs(BASE_KEY_NAMES) do
      named[name] = base .. ':' .. name
    end
    -- the seen- and live-set bucket keys, by level, built as they are used
    named.seen, named.live = {}, {}
    if BASE_KEYS.count >= BASE_KEYS.max or key_cache_left <= 0 then
      BASE_KEYS.by_base, BASE_KEYS.count, key_cache_left = {}, 0, KEY_CACHE_MAX
    end
    BASE_KEYS.by_base[base], BASE_KEYS.count = named, BASE_KEYS.count + 1
  end
  return named
end

-- KEYS[1] is the queue's meta key (it routes the call in a Cluster); ARGV[1] is the base.
local function begin(keys, argv)
  -- (in a library, once: the runtime API and libraries stay the same from call to call)
  if not string then
    redis, string, math, table, tonumber, type, unpack, ipairs, select = runtime_globals()
    if LUA_STATE == false then
      local t = redis.call('TIME')
      LUA_STATE = ':' .. t[1] .. '.' .. t[2]
    end
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
  -- (per-call fields are reset to false or a mark, never to nil: a key set to nil and set again
  -- on the next call costs the table a rehash, measurably on every call)
  SPLIT, REPORT, FLIGHT.freed_at = 1, false, false
  -- (what an earlier call read once is read again: CALL)
  CALL.serial = CALL.serial + 1
  CRAWL.limits, CRAWL.state, CRAWL.holds, CRAWL.weighted = 'unread', false, 0, 'unread'
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
