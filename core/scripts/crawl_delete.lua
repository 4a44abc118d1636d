-- crawlq script: crawl_delete
-- protocol: 7
-- flags: allow-oom
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 crawl name, 4 step ('leases' | 'delayed' | 'dead' | 'lanes' |
--       'all_lanes' | 'finish'), 5 cursor ('0' to start a step), 6 limit (the most entries
--       looked at, and records removed, per call)
-- reply: {next step ('' when done), next cursor, ready removed, delayed removed, leased removed,
--         dead removed}
-- Deleting a named crawl takes several bounded calls, in this order of steps. The first call
-- ('leases', cursor '0') marks the crawl as being deleted (`crawlcfg` field '<cap>:d'): from
-- then on none of its items is leased (its lanes are passed over, as a paused crawl's) and
-- seeds into it are refused (CRAWLQ_REFUSED), so its items can only leave. 'leases', 'delayed'
-- and 'dead' walk the whole set with HSCAN/ZSCAN (a step whose crawl count is 0 is skipped);
-- 'lanes' walks the crawl's hosts with ready items (`ci:<crawl>`, so a small crawl in a large
-- queue costs its own hosts) and empties the crawl's lanes on each, rescheduling the host at
-- its next head (or unscheduling it when it has none left); 'all_lanes' follows only while the
-- crawl still counts ready items (lanes `ci` does not list: made by a build that did not keep
-- it, or a foreign value at the key) and does the same for every host holding items
-- (`hostitems`); 'finish'
-- removes the crawl's counts, limits, weight, host budget and its counts (`cu:<crawl>`),
-- listing and holds. Other crawls' items, and the hosts' politeness, settings and other
-- lanes, are not touched. Removed items leave the live set. The crawl's seen URLs stay in the
-- seen set but no longer count: 'finish' adds them to meta.forgotten (and to meta.hidden,
-- which counts such members) and moves the crawl to its next generation (`crawlseed`), whose
-- seeds mark URLs seen under other members, so a crawl of the same name starts with nothing
-- seen. A removed lease is gone: its ack answers 0 (lost). Every counter stays exact at each
-- step.

local crawl, step, cursor, limit = ARGV[3], ARGV[4], ARGV[5], tonumber(ARGV[6])
local removed = { ready = 0, delayed = 0, leased = 0, dead = 0 }
local level
local function forget_live(rec)
  level = level or current_level(seen_count())
  live_remove_rec(rec, level)
end
local function is_ours(rec)
  return CRAWL.of(rec) == crawl
end
local function reply(next_step, next_cursor)
  return reported({ next_step, next_cursor, removed.ready, removed.delayed, removed.leased, removed.dead }, -1)
end
-- a step with nothing of the crawl left in its set is skipped
local function none_in(field)
  return (tonumber(redis.call('HGET', BASE .. ':c:' .. crawl, field) or '0') or 0) <= 0
end

expect_types({ K_READY, 'zset', K_WAIT, 'zset', K_HEADS, 'zset', K_DELAYED, 'zset', K_LEASED, 'zset',
  K_LEASES, 'hash', K_DEAD, 'zset', K_DEADREC, 'hash', K_HOSTITEMS, 'zset', K_HOSTDELAYED, 'hash',
  K_HOSTDEAD, 'hash', K_REVISITS, 'set', K_WAKE, 'list', CRAWL.cfg_key(), 'hash', CRAWL.held_key(), 'hash',
  BASE .. ':c:' .. crawl, 'hash', BASE .. ':crawls', 'set', CRAWL.held_set(crawl), 'set',
  CRAWL.seed_key(), 'hash' })
local flights = FLIGHT.any()

local steps = {}

function steps.leases()
  if cursor == '0' then
    local stored = redis.call('HGET', CRAWL.cfg_key(), crawl) or ':'
    redis.call('HSET', CRAWL.cfg_key(), crawl, string.match(stored, '^(%d*):') .. ':d')
  end
  if none_in('leased') then
    return reply('delayed', '0')
  end
  local per_host, next_cursor = {}, nil
  removed.leased, next_cursor = REMOVE.leases(cursor, limit, is_ours, function(rec, lease_key)
    forget_live(rec)
    CRAWL.count(crawl, 'leased', -1)
    local _, _, host = rec_head(rec)
    tally(per_host, host, -1)
    if flights then
      -- its slot under the host's in-flight limit is free
      FLIGHT.answered(host, 1, lease_key)
    end
  end)
  tally_flush(per_host, host_items_add)
  if next_cursor ~= '0' then
    return reply('leases', next_cursor)
  end
  return reply('delayed', '0')
end

function steps.delayed()
  if none_in('delayed') then
    return reply('dead', '0')
  end
  local per_host, next_cursor = {}, nil
  -- (a record of the crawl holds `,"crawl":"<crawl>","tag":`, section 2 of PROTOCOL.md: Redis
  -- passes over the others, most of a large `delayed`, in C)
  local match = '*,"crawl":"' .. REMOVE.glob_literal(crawl) .. '","tag":*'
  removed.delayed, next_cursor = REMOVE.delayed(cursor, limit, is_ours, function(rec)
    forget_live(rec)
    CRAWL.count(crawl, 'delayed', -1)
    local _, _, host = rec_head(rec)
    tally(per_host, host, -1)
  end, match)
  tally_flush(per_host, add_delayed)
  tally_flush(per_host, host_items_add)
  if next_cursor ~= '0' then
    return reply('delayed', next_cursor)
  end
  return reply('dead', '0')
end

function steps.dead()
  if none_in('dead') then
    return reply('lanes', '0')
  end
  local per_host, next_cursor = {}, nil
  removed.dead, next_cursor = REMOVE.dead(cursor, limit, is_ours, function(rec)
    CRAWL.count(crawl, 'dead', -1)
    local _, _, host = rec_head(rec)
    tally(per_host, host, -1)
  end)
  tally_flush(per_host, function(host, n) host_count_add(K_HOSTDEAD, host, n) end)
  tally_flush(per_host, host_items_add)
  if next_cursor ~= '0' then
    return reply('dead', next_cursor)
  end
  return reply('lanes', '0')
end

-- The crawl's lanes on one host emptied, at most `budget` records: the host keeps its place at
-- its next head's rank, leaves `ready` (and the hosts count) when it has none left, and a host
-- held for blocked crawls is looked at again (CRAWL.unhold). Returns how many were removed.
local function empty_on(host, budget)
  local lz = CRAWL.lanes(host)
  local had_lanes = redis.call('EXISTS', hp_key(host), lane_key(host, 0), lz) > 0
  local n = CRAWL.empty_lanes(host, budget, crawl, forget_live)
  if n == 0 then
    return 0
  end
  host_items_add(host, -n)
  if had_lanes and redis.call('EXISTS', hp_key(host), lane_key(host, 0), lz) == 0 then
    counter('hosts', -1)
  end
  if redis.call('ZSCORE', K_READY, host) then
    redis.call('ZREM', K_READY, host)
    ready_at_rank(host)
  else
    CRAWL.unhold(host)
  end
  return n
end

-- The crawl's lanes emptied on the hosts of one page of a scan (`entries`: host, value, ...),
-- at most `limit` records: the step's reply, or nil when the scan is over.
local function empty_hosts(entries, this_step, this_cursor, next_cursor)
  local budget = limit
  for i = 1, #entries, 2 do
    local n = empty_on(entries[i], budget)
    budget = budget - n
    removed.ready = removed.ready + n
    if budget <= 0 then
      -- (the same hosts again next call: a host's lanes may hold more than one call's budget)
      counter('ready', -removed.ready)
      return reply(this_step, this_cursor)
    end
  end
  counter('ready', -removed.ready)
  if next_cursor ~= '0' then
    return reply(this_step, next_cursor)
  end
  return nil
end

function steps.lanes()
  if none_in('ready') then
    return reply('finish', '0')
  end
  -- (emptied hosts leave `ci` as they go; a hash of up to 512 fields is answered whole)
  local scan = redis.pcall('HSCAN', CRAWL.hosts_key(crawl), cursor, 'COUNT', limit)
  if scan.err then
    return reply('all_lanes', '0')
  end
  local out = empty_hosts(scan[2], 'lanes', cursor, scan[1])
  if out then
    return out
  end
  if none_in('ready') then
    return reply('finish', '0')
  end
  return reply('all_lanes', '0')
end

function steps.all_lanes()
  if none_in('ready') then
    return reply('finish', '0')
  end
  local scan = redis.call('ZSCAN', K_HOSTITEMS, cursor, 'COUNT', limit)
  return empty_hosts(scan[2], 'all_lanes', cursor, scan[1]) or reply('finish', '0')
end

function steps.finish()
  redis.call('HDEL', CRAWL.cfg_key(), crawl)
  redis.pcall('HDEL', BASE .. ':crawlweight', crawl)
  -- its seen URLs: hidden behind a new generation (a seed into a crawl of the same name finds
  -- them new) and counted forgotten, which changes the seen epoch (clients' caches of what is
  -- seen start again); its host budget goes, its generation stays
  local seen_n = tonumber(redis.call('HGET', BASE .. ':c:' .. crawl, 'seen') or '0') or 0
  local gen = CRAWL.seed_config(redis.call('HGET', CRAWL.seed_key(), crawl))
  if seen_n > 0 then
    gen = gen + 1
    counter('forgotten', seen_n)
    counter('hidden', seen_n)
  end
  CRAWL.write_seed_config(crawl, gen, false)
  redis.pcall('UNLINK', CRAWL.used_key(crawl))
  redis.pcall('HDEL', BASE .. ':crawltat', crawl)
  redis.pcall('HDEL', BASE .. ':cqcur', crawl)
  redis.pcall('UNLINK', BASE .. ':cq:' .. crawl)
  -- (its hosts and lane heads: emptied with its lanes, unless a foreign value stood there)
  redis.pcall('UNLINK', CRAWL.hosts_key(crawl), CRAWL.ages_key(crawl))
  redis.call('SREM', BASE .. ':crawls', crawl)
  redis.call('UNLINK', BASE .. ':c:' .. crawl, CRAWL.held_set(crawl))
  redis.pcall('UNLINK', BASE .. ':cr:' .. crawl)
  return reply('', '0')
end

local run = steps[step]
if not run then
  return redis.error_reply('CRAWLQ_PROTOCOL crawl_delete: unknown step ' .. step)
end
return run()
