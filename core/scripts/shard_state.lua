-- crawlq script: shard_state
-- protocol: 7
-- flags: no-writes
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock
-- reply: {epoch (meta.ep, 0 when never raised), time ms}: when something in this shard is
--        next leasable (now with a host ready; the earliest expiring lease, delayed item or
--        held host otherwise; -1 with nothing queued or leased; a paused queue's end of pause,
--        -1 paused until resumed)
-- What a sweep of a queue of several shards reads from each shard (docs/PROTOCOL.md section
-- 9, "Index"): the state a lease would report, without leasing or raising the epoch.

local epoch = tonumber(redis.call('HGET', K_META, 'ep') or '0')
local paused = META[2]
if paused == '1' then
  return { epoch, -1 }
end
local until_ms = tonumber(paused or '')
if until_ms and until_ms > NOW then
  return { epoch, until_ms }
end
if redis.call('ZCARD', K_READY) > 0 then
  return { epoch, NOW }
end
return { epoch, next_due() }
