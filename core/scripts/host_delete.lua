-- crawlq script: host_delete
-- protocol: 7
-- flags: allow-oom
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 host key, 4 step ('leases' | 'delayed' | 'dead' | 'lanes' |
--       'finish'), 5 cursor ('0' to start a step), 6 limit (the most entries looked at),
--       7 '1' to also answer the removed items' identities (optional), 8 the deletion's id
--       (any text unique to this deletion, the same in each of its calls; optional)
-- reply: {next step ('' when done), next cursor, ready removed, delayed removed, leased
--         removed, dead removed, items the host still holds, then with ARGV 7 '1' the
--         identity (key, else URL, else host key) of each item removed by this call}
-- Deleting a host takes several bounded calls, in this order of steps. The first call
-- ('leases', cursor '0') pauses the host until resumed and marks it as being deleted
-- (hostdeleting[host] = the deletion's id), so none of its items is leased while the rest runs:
-- pausing or resuming the host changes nothing until the mark is gone (host_config). 'leases', 'delayed' and 'dead' walk the whole set with HSCAN/ZSCAN (a step
-- whose host count is 0 is skipped); 'lanes' empties the host's lanes, `limit` records per
-- call; 'finish' removes the host's settings (delay override, adaptive delay, pause, budget and
-- its count) and the mark and, if items of it arrived meanwhile, schedules it again; when
-- another deletion of the host began meanwhile (the mark holds its id), that one finishes it. Removed items leave the
-- live set but stay in the seen set (a client that is asked to forget them fingerprints the
-- identities and runs seen_forget). A removed lease is gone: its ack answers 0 (lost).
-- Every counter stays exact at each step.

local host, step, cursor, limit = ARGV[3], ARGV[4], ARGV[5], tonumber(ARGV[6])
local want_identities = ARGV[7] == '1'
local deletion = ARGV[8] or ''
local removed = { ready = 0, delayed = 0, leased = 0, dead = 0 }
-- with ARGV[7] '1': the identities of the removed items, for the client's seen_forget call
local identities = {}
local level
local function note_identity(rec)
  if want_identities then
    identities[#identities + 1] = rec_identity(rec)
  end
end
local function forget_live(rec)
  level = level or current_level(seen_count())
  live_remove_rec(rec, level)
  note_identity(rec)
end
local function is_ours(rec)
  local _, _, rec_host = rec_head(rec)
  return rec_host == host
end
local function reply(next_step, next_cursor)
  host_items_add(host, -(removed.ready + removed.delayed + removed.leased + removed.dead))
  local left = redis.call('ZSCORE', K_HOSTITEMS, host)
  local out = { next_step, next_cursor, removed.ready, removed.delayed, removed.leased, removed.dead,
    left and -tonumber(left) or 0 }
  for _, identity in ipairs(identities) do
    out[#out + 1] = identity
  end
  return out
end

-- The host's priorities, with its priority set and every lane read before any write: a foreign
-- value at one of them fails the call whole (checked by the first call too, so a deletion that
-- could not finish does not begin).
local function checked_priorities()
  local prios = host_priorities(host)
  for _, prio in ipairs(prios) do
    local lane = lane_key(host, prio)
    if type(redis.pcall('LLEN', lane)) == 'table' then
      fail('CORRUPT', 'key ' .. lane .. ' holds a ' .. redis.call('TYPE', lane).ok .. ', expected a list')
    end
  end
  if CRAWL.on() then
    expect_types({ CRAWL.lanes(host), 'zset', CRAWL.tags(host), 'hash' })
    for _, member in ipairs(redis.call('ZRANGE', CRAWL.lanes(host), '0', '-1')) do
      expect_types({ CRAWL.lane(member, host), 'list' })
    end
  end
  return prios
end

expect_types({ K_READY, 'zset', K_WAIT, 'zset', K_HEADS, 'zset', K_DELAYED, 'zset', K_LEASED, 'zset',
  K_LEASES, 'hash', K_DEAD, 'zset', K_DEADREC, 'hash', K_HOSTDELAY, 'hash', K_ADAPTIVE, 'hash',
  K_HOSTPAUSE, 'hash', K_HOSTDELETING, 'hash', K_HOSTITEMS, 'zset', K_HOSTDELAYED, 'hash',
  K_HOSTDEAD, 'hash', K_HOSTBUDGET, 'hash', K_HOSTUSED, 'hash', K_REVISITS, 'set', FLIGHT.limits, 'hash',
  FLIGHT.counts, 'hash', FLIGHT.full, 'hash', BASE .. ':hostrobots', 'set', FLIGHT.pacing, 'hash',
  FLIGHT.answers, 'hash' })

-- Each step is a function of its own (steps[step]), which answers the reply.
local steps = {}

function steps.leases()
  if cursor == '0' then
    checked_priorities()
    -- nothing of the host is leased from now on (the end removes the pause)
    redis.call('ZREM', K_READY, host)
    redis.call('ZADD', K_WAIT, PAUSED_FOREVER, host)
    redis.call('HSET', K_HOSTPAUSE, host, int(PAUSED_FOREVER) .. ':')
    redis.call('HSET', K_HOSTDELETING, host, deletion)
  end
  local next_cursor
  removed.leased, next_cursor = REMOVE.leases(cursor, limit, is_ours, function(rec)
    forget_live(rec)
    CRAWL.count(CRAWL.of(rec), 'leased', -1)
  end)
  if next_cursor ~= '0' then
    return reply('leases', next_cursor)
  end
  return reply('delayed', '0')
end

function steps.delayed()
  if not redis.call('HGET', K_HOSTDELAYED, host) then
    return reply('dead', '0')
  end
  -- (a record of the host spells its host key, in its `host` field or in its URL: Redis passes
  -- over the others, most of a large `delayed`, in C)
  local n, next_cursor = REMOVE.delayed(cursor, limit, is_ours, function(rec)
    forget_live(rec)
    CRAWL.count(CRAWL.of(rec), 'delayed', -1)
  end, '*' .. REMOVE.glob_literal(host) .. '*')
  add_delayed(host, -n)
  removed.delayed = n
  if next_cursor ~= '0' then
    return reply('delayed', next_cursor)
  end
  return reply('dead', '0')
end

function steps.dead()
  if not redis.call('HGET', K_HOSTDEAD, host) then
    return reply('lanes', '0')
  end
  local n, next_cursor = REMOVE.dead(cursor, limit, is_ours, function(rec)
    note_identity(rec)
    CRAWL.count(CRAWL.of(rec), 'dead', -1)
  end)
  host_count_add(K_HOSTDEAD, host, -n)
  removed.dead = n
  if next_cursor ~= '0' then
    return reply('dead', next_cursor)
  end
  return reply('lanes', '0')
end

function steps.lanes()
  -- (a host without a priority set has only its priority-0 lane)
  local hp, lane_0 = hp_key(host), lane_key(host, 0)
  local prios = checked_priorities()
  -- (a host's crawl lanes are listed in a key that never exists in a queue without crawls)
  local lz = CRAWL.lanes(host)
  local had_lanes = redis.call('EXISTS', hp, lane_0, lz) > 0
  local budget = limit
  for _, prio in ipairs(prios) do
    if budget <= 0 then
      break
    end
    local lane = lane_key(host, prio)
    local recs = redis.call('LRANGE', lane, '0', int(budget - 1))
    for _, rec in ipairs(recs) do
      forget_live(rec)
    end
    redis.call('LTRIM', lane, int(#recs), '-1')
    budget = budget - #recs
    removed.ready = removed.ready + #recs
    local member = head_member(host, prio)
    local head = redis.call('LINDEX', lane, '0')
    if head then
      local _, ts = rec_seq_ts(head)
      redis.call('ZADD', K_HEADS, ts, member)
    else
      redis.call('ZREM', hp, prio)
      redis.call('ZREM', K_HEADS, member)
    end
  end
  if CRAWL.on() and budget > 0 then
    local n = CRAWL.empty_lanes(host, budget, nil, forget_live)
    budget = budget - n
    removed.ready = removed.ready + n
  end
  counter('ready', -removed.ready)
  local has_lanes = redis.call('EXISTS', hp, lane_0, lz) > 0
  if had_lanes and not has_lanes then
    counter('hosts', -1)
  end
  if budget <= 0 and has_lanes then
    return reply('lanes', '0')
  end
  return reply('finish', '0')
end

function steps.finish()
  local mark = redis.call('HGET', K_HOSTDELETING, host)
  if mark and mark ~= deletion then
    -- another deletion of this host began after this one: it holds the host and finishes it
    return reply('', '0')
  end
  redis.call('HDEL', K_HOSTDELETING, host)
  redis.call('ZREM', K_WAIT, host)
  redis.call('ZREM', K_READY, host)
  redis.call('HDEL', K_HOSTDELAY, host)
  redis.call('HDEL', K_ADAPTIVE, host)
  redis.call('HDEL', K_HOSTPAUSE, host)
  redis.call('HDEL', K_HOSTBUDGET, host)
  redis.call('HDEL', K_HOSTUSED, host)
  -- what it added to crawls with a host budget counts no more, as hostused
  for _, crawl in ipairs(CRAWL.budgeted()) do
    redis.pcall('HDEL', CRAWL.used_key(crawl), host)
  end
  -- its leases are gone: nothing of it is in flight any more
  redis.call('HDEL', FLIGHT.limits, host)
  redis.call('HDEL', FLIGHT.counts, host)
  redis.call('HDEL', FLIGHT.full, host)
  redis.call('HDEL', FLIGHT.pacing, host)
  redis.call('HDEL', FLIGHT.answers, host)
  redis.call('SREM', BASE .. ':hostrobots', host)
  -- its crawls' tags, unless items of a crawl arrived meanwhile
  if CRAWL.on() and redis.call('EXISTS', CRAWL.lanes(host)) == 0 then
    redis.call('UNLINK', CRAWL.tags(host))
  end
  -- items of the host that arrived while it was being deleted stay, and are leasable
  ready_now(host)
  return reply('', '0')
end

local run = steps[step]
if not run then
  return redis.error_reply('CRAWLQ_PROTOCOL host_delete: unknown step ' .. step)
end
return run()
