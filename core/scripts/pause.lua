-- crawlq script: pause
-- protocol: 2
-- flags: allow-oom
-- KEYS: the 12 queue keys (see common.lua)
-- ARGV: 1 base, 2 clock, 3 '1' pause, '0' resume, '' only read
-- reply: {paused before (0/1), paused now (0/1)}
-- A paused queue (meta.paused) leases nothing: lease answers as if nothing were leasable and
-- blocked lease calls keep waiting. Everything else works: seeding, answering leases already
-- handed out, stats, dead letters. Resuming wakes the blocked lease calls.

local before = redis.call('HGET', K_META, 'paused') and 1 or 0
local now = before
if ARGV[3] == '1' then
  redis.call('HSET', K_META, 'paused', '1')
  now = 1
elseif ARGV[3] == '0' then
  if before == 1 then
    expect_types({ K_WAKE, 'list' })
    redis.call('HDEL', K_META, 'paused')
    wake(32)
  end
  now = 0
end
return { before, now }
