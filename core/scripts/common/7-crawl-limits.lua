-- Crawl limits (docs/PROTOCOL.md section 3, "Crawl caps, pauses and weights"): a named crawl
-- may be paused, capped (the most of its items leased at once in this shard: the shard's share
-- of the crawl's cap, given by the client) or rated (the most leases a second in this shard).
-- `<base>:crawlcfg` holds them (crawl -> '<cap digits or empty>:<"1" when paused, "d" while
-- being deleted, or empty>[:<rate>]'; a crawl with none has no field, so a queue with no
-- limits reads one HLEN per lease call and nothing more). A crawl is blocked while it is
-- paused or has as many items leased as its cap, and held back by its rate until its next
-- lease time (`<base>:crawltat`). A lease passes over the lanes of such crawls (the next lane
-- of its host is taken instead). A host whose lanes are all of blocked crawls is held in
-- `wait` at PAUSED_FOREVER, marked in `<base>:crawlheld` (host -> '1') and listed in
-- `<base>:ch:<crawl>` for each crawl it waits on, until an answer takes one of them under its
-- cap, a resume or a new cap releases it, or an item of any crawl is queued on it (which puts
-- it back in `ready`: the next lease looks again); one with a crawl held back by its rate waits
-- in `wait` until that crawl's next lease time instead.

-- Each crawl's hosts (`<base>:cq:<crawl>`, a set), for workers that lease from chosen crawls
-- (lease.lua, LEASE.candidates): a host is added when a lane of the crawl is made on it, and
-- removed lazily, when a lease finds it without one. (A set of strings is a hash table, which
-- SSCAN walks a few hosts a call; a hash of up to 512 fields, such as `ci:<crawl>`, is a
-- listpack, which HSCAN answers whole.)
function CRAWL.index(crawl, host)
  redis.pcall('SADD', BASE .. ':cq:' .. crawl, host)
end

-- Each crawl's hosts with ready items (`<base>:ci:<crawl>`, host -> how many of the crawl's lanes
-- the host lists in its crawl lanes `hl:<host>`, one per priority; a host with none has no
-- field), so that crawl_stats answers them with one HLEN. Kept where a lane's member enters or
-- leaves `hl:<host>`: `changed` is that ZADD's or ZREM's reply (1 when the member was added or
-- removed). A foreign value at the key only loses the figure (pcall).
function CRAWL.lane_listed(member, host, changed)
  if changed == 1 then
    redis.pcall('HINCRBY', CRAWL.hosts_key(CRAWL.member_crawl(member)), host, 1)
  end
end
function CRAWL.lane_unlisted(member, host, changed)
  if changed == 1 then
    local key = CRAWL.hosts_key(CRAWL.member_crawl(member))
    local left = redis.pcall('HINCRBY', key, host, -1)
    if type(left) == 'number' and left <= 0 then
      redis.call('HDEL', key, host)
    end
  end
end
function CRAWL.hosts_key(crawl)
  return BASE .. ':ci:' .. crawl
end

-- Each crawl's lane heads (`<base>:cz:<crawl>`, a zset: member `<priority>:<host>` for each
-- non-empty lane of the crawl, score its head's `ts`, as in `heads`), so that crawl_stats
-- answers the crawl's oldest pending age with one ZRANGE. Written beside every `heads` write of
-- a crawl lane: CRAWL.head_age with the lane's member and host, CRAWL.head_age_of with its
-- `heads` member (`*<priority>:<crawl>:<host>`; crawl names hold no ':'); ts nil: the lane is
-- empty. A foreign value at the key only loses the figure (pcall).
function CRAWL.head_age(member, host, ts)
  local prio, crawl = string.match(member, '^(%-?%d+):(.*)$')
  local key = CRAWL.ages_key(crawl)
  if ts then
    redis.pcall('ZADD', key, ts, prio .. ':' .. host)
  else
    redis.pcall('ZREM', key, prio .. ':' .. host)
  end
end
function CRAWL.ages_key(crawl)
  return BASE .. ':cz:' .. crawl
end
function CRAWL.head_age_of(heads_member, ts)
  local member, host = string.match(heads_member, '^%*(%-?%d+:[^:]*):(.*)$')
  if member then
    CRAWL.head_age(member, host, ts)
  end
end

-- A seed call's new lanes of its crawl, each with its head queued now, written together at the
-- end of the call: their `heads` and `cz` entries and their hosts' `cq` members with one command
-- each (per 4,000), their hosts' `ci` counts with one HSET for the hosts that listed no crawl
-- lane before (their field was absent) and one HINCRBY for each other host.
function CRAWL.new_lanes()
  return { hosts = {}, heads = {}, ages = {} }
end
-- `listed`: the ZADD reply that listed `member` in the host's crawl lanes (1: a new member).
function CRAWL.lane_made(made, member, host, listed)
  local heads, ages = made.heads, made.ages
  heads[#heads + 1], heads[#heads + 2] = NOW_DIGITS, CRAWL.head(member, host)
  ages[#ages + 1], ages[#ages + 2] = NOW_DIGITS, string.match(member, '^(%-?%d+):') .. ':' .. host
  if listed == 1 then
    local n = made.hosts[host]
    if not n then
      made.hosts[#made.hosts + 1] = host
    end
    made.hosts[host] = (n or 0) + 1
  end
end
-- `others`: per host, how many crawl lanes it listed before the call (SEED.push_crawl).
function CRAWL.lanes_made(crawl, made, others)
  if #made.heads == 0 then
    return
  end
  call_chunked('ZADD', K_HEADS, made.heads)
  local key, fresh = CRAWL.hosts_key(crawl), {}
  for _, host in ipairs(made.hosts) do
    if others[host] == 0 then
      fresh[#fresh + 1], fresh[#fresh + 2] = host, int(made.hosts[host])
    else
      redis.pcall('HINCRBY', key, host, int(made.hosts[host]))
    end
  end
  -- (a foreign value at one of the crawl's own keys only loses what it holds: pcall)
  for first = 1, #fresh, 4000 do
    redis.pcall('HSET', key, unpack(fresh, first, math.min(first + 3999, #fresh)))
  end
  for first = 1, #made.ages, 4000 do
    redis.pcall('ZADD', CRAWL.ages_key(crawl), unpack(made.ages, first, math.min(first + 3999, #made.ages)))
  end
  local indexed = {}
  for _, host in ipairs(made.hosts) do
    indexed[#indexed + 1] = host
  end
  for first = 1, #indexed, 4000 do
    redis.pcall('SADD', BASE .. ':cq:' .. crawl, unpack(indexed, first, math.min(first + 3999, #indexed)))
  end
end

-- The per-call state (reset by begin()): its keys are there from the start (see begin()).
CRAWL.limits, CRAWL.state, CRAWL.holds, CRAWL.weighted, CRAWL.weights = 'unread', false, 0, 'unread', false
FLIGHT.freed_at = false

function CRAWL.cfg_key()
  return BASE .. ':crawlcfg'
end
function CRAWL.held_key()
  return BASE .. ':crawlheld'
end
function CRAWL.held_set(crawl)
  return BASE .. ':ch:' .. crawl
end
-- What a seed into a named crawl reads (seed.lua): `<base>:crawlseed` (crawl ->
-- '<generation>:<host budget>', each digits or empty). The generation (0 when empty) counts the
-- crawl's deletions that hid its seen URLs (crawl_delete): a seen member of generation g > 0 is
-- CRAWL.gen_member's. The host budget is the most new URLs each host may add to the crawl; its
-- counts are in `<base>:cu:<crawl>` (host -> new URLs it added to the crawl while the crawl had
-- a budget).
function CRAWL.seed_key()
  return BASE .. ':crawlseed'
end
-- A crawl's generation and host budget from its `crawlseed` field (absent: 0 and false).
function CRAWL.seed_config(field)
  local gen, budget = string.match(field or ':', '^(%d*):(%d*)$')
  return tonumber(gen or '') or 0, tonumber(budget or '') or false
end
-- The crawls with a host budget (none when `crawlseed` holds a foreign value).
function CRAWL.budgeted()
  local all, out = redis.pcall('HGETALL', CRAWL.seed_key()), {}
  if all.err then
    return out
  end
  for i = 1, #all, 2 do
    local _, budget = CRAWL.seed_config(all[i + 1])
    if budget then
      out[#out + 1] = all[i]
    end
  end
  return out
end
-- Write a crawl's generation and host budget (false: none) to `crawlseed`; a crawl with neither
-- has no field.
function CRAWL.write_seed_config(crawl, gen, budget)
  if gen == 0 and not budget then
    redis.call('HDEL', CRAWL.seed_key(), crawl)
  else
    redis.call('HSET', CRAWL.seed_key(), crawl,
      (gen > 0 and int(gen) or '') .. ':' .. (budget and int(budget) or ''))
  end
end
-- The seen member of a fingerprint `member` (a 64-bit decimal) in generation `gen` > 0: its last
-- nine digits moved by a multiple of gen, modulo 10^9 (one to one, and still an integer, so the
-- seen set's buckets stay Redis intsets). The members a crawl had before a deletion are
-- so not those it has after: its URLs are new to it again.
function CRAWL.gen_member(member, gen)
  local n = #member
  local shift = (gen * 387420489) % 1000000000
  local first = string.byte(member, 1) == 45 and 2 or 1
  if n - first < 9 then
    -- (a number below 10^9: no high digits to keep, no padding)
    return string.sub(member, 1, first - 1)
      .. int((string.sub(member, first) + 0 + shift) % 1000000000)
  end
  return string.sub(member, 1, n - 9)
    .. string.format('%09d', (string.sub(member, n - 8) + 0 + shift) % 1000000000)
end
function CRAWL.used_key(crawl)
  return BASE .. ':cu:' .. crawl
end

-- Whether any crawl of this shard is paused, capped or rated, read once per call (CRAWL.limits,
-- reset by begin()).
function CRAWL.limited()
  if CRAWL.limits == 'unread' then
    -- (a foreign value at the key: no limits, as without it)
    local n = CRAWL.on() and redis.pcall('HLEN', CRAWL.cfg_key())
    CRAWL.limits = type(n) == 'number' and n > 0
  end
  return CRAWL.limits
end

-- A crawl's limits and leased count, read once per call ({cap = n or nil, paused = bool,
-- rate = n or nil, tat = ms (with a rate), leased = n}; false for a crawl with no limits). CRAWL.count keeps `leased` current.
function CRAWL.limits_of(crawl)
  CRAWL.state = CRAWL.state or {}
  local s = CRAWL.state[crawl]
  if s == nil then
    local cfg = redis.pcall('HGET', CRAWL.cfg_key(), crawl)
    s = false
    if type(cfg) == 'string' then
      local cap, paused, rate = string.match(cfg, '^(%d*):(%w*):?([%d.]*)$')
      s = {
        cap = tonumber(cap or ''),
        -- leases a second in this shard, and when the next may be (crawltat, ms)
        rate = tonumber(rate or ''),
        -- ('d': being deleted, crawl_delete; leased no more, as if paused)
        paused = paused == '1' or paused == 'd',
        leased = tonumber(redis.call('HGET', BASE .. ':c:' .. crawl, 'leased') or '0') or 0,
      }
      if s.rate then
        s.tat = tonumber(redis.pcall('HGET', BASE .. ':crawltat', crawl) or '0') or 0
      end
    end
    CRAWL.state[crawl] = s
  end
  return s
end

function CRAWL.blocked(crawl)
  local s = CRAWL.limits_of(crawl)
  return s and (s.paused or (s.cap ~= nil and s.leased >= s.cap)) or false
end

-- When a crawl held back only by its rate may be leased again (ms), or nil: its next lease
-- time (`crawltat`) has not come.
function CRAWL.rate_wait(crawl)
  local s = CRAWL.limits_of(crawl)
  if s and s.rate and s.tat > NOW then
    return s.tat
  end
end

-- Hold a host whose ready lanes are all of the blocked crawls `crawls` (see above). A foreign
-- value at the mark or a crawl's set (nothing could release the host) holds it as a host whose
-- lane holds one: paused until resumed.
function CRAWL.hold(host, crawls)
  CRAWL.holds = (CRAWL.holds or 0) + 1
  local marked = redis.pcall('HSET', CRAWL.held_key(), host, '1')
  for _, crawl in ipairs(crawls) do
    if type(marked) == 'table' then
      break
    end
    marked = redis.pcall('SADD', CRAWL.held_set(crawl), host)
  end
  if type(marked) == 'table' then
    hold_corrupt_host(host)
    return
  end
  redis.call('ZADD', K_WAIT, int(PAUSED_FOREVER), host)
end

-- Put a host held for blocked crawls back in `ready` at its rank, waking a blocked lease call.
-- A host no longer marked (released before), or held since for another reason (paused, at its
-- in-flight limit, being deleted), is left as it is.
function CRAWL.unhold(host)
  if redis.pcall('HDEL', CRAWL.held_key(), host) ~= 1 then
    return
  end
  local score = redis.call('ZSCORE', K_WAIT, host)
  if not score or score + 0 < PAUSED_FOREVER or redis.call('HGET', FLIGHT.full, host)
    or redis.call('HGET', K_HOSTPAUSE, host) or redis.call('HGET', K_HOSTDELETING, host) then
    return
  end
  redis.call('ZREM', K_WAIT, host)
  ready_at_rank(host)
  wake(1)
  FLIGHT.freed_at = NOW
end

-- A host held in `wait` (at `score`) got a new ready item: if it was held for blocked crawls,
-- it is put back in `ready` (the next lease looks at its lanes again).
function CRAWL.queued_on_held(host, score)
  if score and score + 0 >= PAUSED_FOREVER and CRAWL.on() then
    CRAWL.unhold(host)
  end
end

-- Release hosts held for `crawl` once it is not blocked: at most `limit` (default: its free
-- slots under its cap, at most 250). Returns how many were released and how many stay held.
function CRAWL.release(crawl, limit)
  local key = CRAWL.held_set(crawl)
  local waiting = redis.pcall('SCARD', key)
  if type(waiting) ~= 'number' then
    return 0, 0
  end
  if waiting == 0 or CRAWL.blocked(crawl) then
    return 0, waiting
  end
  local s = CRAWL.limits_of(crawl)
  local n = limit or (s and s.cap and s.cap - s.leased) or 250
  n = math.max(1, math.min(n, 250))
  local hosts = redis.call('SPOP', key, int(n))
  for _, host in ipairs(hosts) do
    CRAWL.unhold(host)
  end
  return #hosts, waiting - #hosts
end

-- A crawl's leased count changed by `delta` (CRAWL.count): kept in the call's limits, and an
-- answer that takes the crawl under its cap releases hosts held for it.
function CRAWL.leased_changed(crawl, delta)
  local s = CRAWL.state and CRAWL.state[crawl]
  if s then
    s.leased = s.leased + delta
  end
  if delta > 0 and s and s.rate and s.rate > 0 then
    -- a lease under a rate: the next one of the crawl may be 1000 / rate ms after this one
    s.tat = math.max(s.tat, NOW) + 1000 / s.rate * delta
    redis.pcall('HSET', BASE .. ':crawltat', crawl, string.format('%.3f', s.tat))
  end
  if delta < 0 then
    CRAWL.release(crawl)
  end
end
