-- crawlq script: due
-- protocol: 7
-- flags: allow-oom
-- KEYS: the meta key of the queue's own base <prefix>:{<queue>} (see common/1-prelude.lua)
-- ARGV: 1 base, 2 call flags and clock, 3 wake markers to push when a report makes a shard
--       due now, 4 most due shards to answer (0: none), 5 sweep period ms (0: none), then 4
--       fields per shard report: kind ('l' lower, 's' set), shard number, epoch, time ms
--       (-1 with 's': nothing queued or leased in that shard)
-- reply: {now, sweep (1: this caller reads every shard's state now, 0: not), the earliest
--        score after now (-1: none), then up to ARGV 4 shards due now, earliest first}
-- The index of a queue of several shards (docs/PROTOCOL.md section 9): `<base>:due` scores
-- each shard by when it may next have something leasable; `<base>:dueep` keeps the epoch of
-- the last report each shard's score came from. A lower report moves the score down (never
-- up: lowering is always safe) and raises the kept epoch; a set report (a shard's whole state,
-- from a lease or a sweep) applies only when its epoch is newer than the kept one, so a
-- state read before a write that was already reported never hides that write. A sweep (one
-- caller per period, decided here with SET NX PX) reads every shard again, repairing what a
-- client that died between a write and its report left out.

local k_due, k_epochs, k_sweep = BASE .. ':due', BASE .. ':dueep', BASE .. ':sweep'
local markers, pick, sweep_ms = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
if ARGV[6] then
  -- (only reports write the index; a call that only reads it, as every lease of an idle
  -- queue does, finds a foreign value there with its read)
  expect_zsets({ k_due })
  expect_types({ k_epochs, 'hash' })
end
local woke = false
local i = 6
while ARGV[i] do
  local kind, shard, epoch, at = ARGV[i], ARGV[i + 1], ARGV[i + 2] + 0, ARGV[i + 3] + 0
  local kept = tonumber(redis.call('HGET', k_epochs, shard) or '0')
  if kind == 'l' then
    if at >= 0 then
      redis.call('ZADD', k_due, 'LT', int(at), shard)
      woke = woke or at <= NOW
    end
    if epoch > kept then
      redis.call('HSET', k_epochs, shard, int(epoch))
    end
  elseif epoch >= kept then
    if at < 0 then
      redis.call('ZREM', k_due, shard)
    else
      redis.call('ZADD', k_due, int(at), shard)
    end
    redis.call('HSET', k_epochs, shard, int(epoch))
  end
  i = i + 4
end
if woke then
  expect_types({ K_WAKE, 'list' })
  wake(markers)
end
local out = { NOW, 0, -1 }
if pick > 0 then
  if sweep_ms > 0 and redis.call('SET', k_sweep, '1', 'NX', 'PX', int(sweep_ms)) then
    out[2] = 1
  end
  -- the index has at most one member per shard: one read, earliest first, gives the shards
  -- due now and the earliest time after now
  local index = redis.call('ZRANGE', k_due, '0', '-1', 'WITHSCORES')
  local picked = 0
  for j = 1, #index, 2 do
    local at = index[j + 1] + 0
    if at > NOW then
      out[3] = at
      break
    end
    if picked < pick then
      picked = picked + 1
      out[3 + picked] = index[j]
    end
  end
end
return out
