-- crawlq script: pause
-- protocol: 7
-- flags: allow-oom
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 '1' pause, '0' resume, '' only read, 4 (with '1', optional) pause
--       for that many ms from now instead of until resumed
-- reply: {paused before (0/1), paused now (0/1), paused until (ms), 0 until resumed, -1 not paused}
-- A paused queue (meta.paused: '1' until resumed, else the end of the pause in ms) leases
-- nothing: lease answers as if nothing were leasable (with the end of a timed pause as its
-- next due time) and blocked lease calls keep waiting. Everything else works: seeding,
-- answering leases already handed out, stats, dead letters. Resuming wakes the blocked lease
-- calls; a timed pause is over once its end has passed.

-- the pause in force: PAUSED_FOREVER until resumed, its end in ms, or nil
local stored = META[2]
local function in_force(value)
  local at = value and (value == '1' and PAUSED_FOREVER or tonumber(value))
  return at and at > NOW and at or nil
end
local until_ms = in_force(stored)
local before = until_ms and 1 or 0
if ARGV[3] == '1' then
  local for_ms = ARGV[4] and ARGV[4] ~= '' and tonumber(ARGV[4])
  local value = for_ms and int(NOW + for_ms) or '1'
  redis.call('HSET', K_META, 'paused', value)
  until_ms = in_force(value)
elseif ARGV[3] == '0' then
  if stored then
    expect_types({ K_WAKE, 'list' })
    redis.call('HDEL', K_META, 'paused')
    if before == 1 then
      wake(32)
    end
  end
  until_ms = nil
end
local reply_until = -1
if until_ms then
  reply_until = until_ms < PAUSED_FOREVER and until_ms or 0
end
-- a resumed shard may have work now (a timed pause ends in the lease's own report)
return reported({ before, until_ms and 1 or 0, reply_until }, (before == 1 and not until_ms) and NOW or -1)
