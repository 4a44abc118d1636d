-- crawlq script: dead_purge
-- protocol: 7
-- flags: allow-oom
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 limit (the most dead letters this call removes, oldest first),
--       then optionally ids: remove those of them that are dead letters instead
-- reply: {removed, dead letters left}, then with ids one flag per id given: 1 when it was a
--        dead letter and is removed, 0 when not (unknown, requeued, purged, or named twice)
-- Purged items stay in the seen set: seeding them again needs force. A client calls again
-- until none are left, so that no call holds Redis for long however many dead letters and
-- hosts there are; every count is exact after each call.
local ids, flags
if #ARGV > 3 then
  ids, flags = {}, {}
  local named = { unpack(ARGV, 4) }
  local scores = redis.call('ZMSCORE', K_DEAD, unpack(named))
  local taken = {}
  for i, id in ipairs(named) do
    if scores[i] and not taken[id] then
      taken[id] = true
      ids[#ids + 1] = id
      flags[i] = 1
    else
      flags[i] = 0
    end
  end
else
  ids = redis.call('ZRANGE', K_DEAD, '0', int(tonumber(ARGV[3]) - 1))
end
expect_types({ K_DEADREC, 'hash', K_HOSTDEAD, 'hash', K_HOSTITEMS, 'zset' })
if #ids > 0 then
  -- the purged items leave their hosts' counts: read once for all the call's hosts, then the
  -- hosts left with none removed with one command (dead letters of many one-URL hosts), the
  -- others lowered
  local purged = {}
  local records = redis.call('HMGET', K_DEADREC, unpack(ids))
  for i = 1, #ids do
    local host = records[i] and select(3, rec_head(records[i]))
    CRAWL.count(CRAWL.of(records[i]), 'dead', -1)
    if host then
      tally(purged, host, 1)
    end
  end
  if #purged > 0 then
    local items = redis.call('ZMSCORE', K_HOSTITEMS, unpack(purged))
    local dead = redis.call('HMGET', K_HOSTDEAD, unpack(purged))
    local no_items, no_dead = {}, {}
    for i, host in ipairs(purged) do
      local n = purged[host]
      -- hostitems scores are minus the count
      if not items[i] or -tonumber(items[i]) <= n then
        no_items[#no_items + 1] = host
      else
        redis.call('ZINCRBY', K_HOSTITEMS, int(n), host)
      end
      if (tonumber(dead[i]) or 0) <= n then
        no_dead[#no_dead + 1] = host
      else
        redis.call('HINCRBY', K_HOSTDEAD, host, int(-n))
      end
    end
    if #no_items > 0 then
      redis.call('ZREM', K_HOSTITEMS, unpack(no_items))
    end
    if #no_dead > 0 then
      redis.call('HDEL', K_HOSTDEAD, unpack(no_dead))
    end
  end
  redis.call('ZREM', K_DEAD, unpack(ids))
  redis.call('HDEL', K_DEADREC, unpack(ids))
end
local left = redis.call('ZCARD', K_DEAD)
if left == 0 then
  -- counts of dead letters whose record no script can read (written by something else) are
  -- settled once the set is empty, as are records without a dead letter
  local unread = redis.call('HGETALL', K_HOSTDEAD)
  for i = 1, #unread, 2 do
    host_items_add(unread[i], -tonumber(unread[i + 1]))
  end
  redis.call('UNLINK', K_DEADREC, K_HOSTDEAD)
end
counter('purged_total', #ids)
local reply = { #ids, left }
for _, flag in ipairs(flags or {}) do
  reply[#reply + 1] = flag
end
return reply
