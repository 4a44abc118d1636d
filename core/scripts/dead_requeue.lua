-- crawlq script: dead_requeue
-- protocol: 7
-- flags: allow-oom
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 mode ('all' | 'ids'), 4 limit (mode 'all': at most this many,
--       oldest first), then for mode 'ids' the ids to requeue, for mode 'all' optionally an
--       offset (the oldest dead letters to pass over: those an earlier call left, 0 if absent)
-- reply: {requeued, remaining_dead, flag1, flag2, ...}; one flag per id (mode 'ids') or per
--        dead letter looked at (mode 'all'): 1 when it was a dead letter and is queued again,
--        0 when it was not found or stays a dead letter
-- A requeued item starts over: attempt 0, last_error kept for reference, back of its lane; it
-- is live again (a forced seed of it is a duplicate).

local ids
if ARGV[3] == 'all' then
  local offset = tonumber(ARGV[5] or '0')
  ids = redis.call('ZRANGE', K_DEAD, int(offset), int(offset + tonumber(ARGV[4]) - 1))
else
  ids = {}
  for i = 5, #ARGV do
    ids[#ids + 1] = ARGV[i]
  end
end
expect_types({ K_DEAD, 'zset', K_DEADREC, 'hash', K_READY, 'zset', K_WAIT, 'zset', K_HEADS, 'zset', K_WAKE, 'list',
  K_HOSTDEAD, 'hash' })
local flags, requeued = {}, 0
for i, id in ipairs(ids) do
  local rec = redis.call('HGET', K_DEADREC, id)
  local fresh = rec and rec_rebuild(rec, NOW, 0, nil)
  -- a dead letter whose item a forced seed queued again meanwhile is not queued twice: it
  -- stays a dead letter (purge removes it)
  local host
  if fresh and live_add_rec(fresh) then
    host = enqueue_ready(fresh, false)
    if not host then
      -- its lane or priority set holds a foreign value: it stays a dead letter
      live_remove_rec(fresh, current_level(seen_count()))
    end
  end
  if host then
    redis.call('HDEL', K_DEADREC, id)
    redis.call('ZREM', K_DEAD, id)
    host_count_add(K_HOSTDEAD, host, -1)
    CRAWL.count(CRAWL.of(fresh), 'dead', -1)
    requeued = requeued + 1
    flags[i] = 1
  else
    -- not a dead letter, one whose record no script can read, one whose item is queued or
    -- leased again, or whose lane or live bucket holds a foreign value (it stays where it is)
    flags[i] = 0
  end
end
counter('requeued_total', requeued)
wake(requeued)
local out = { requeued, redis.call('ZCARD', K_DEAD) }
for i = 1, #flags do
  out[#out + 1] = flags[i]
end
return reported(out, requeued > 0 and NOW or -1)
