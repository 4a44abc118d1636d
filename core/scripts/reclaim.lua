-- crawlq script: reclaim
-- protocol: 7
-- flags: allow-oom
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 limit (expired leases handled in this call), 4 max attempts
-- reply: {requeued, dead, remaining_expired}
-- The same recovery also runs, bounded, at the start of every lease call.

local expired = redis.call('ZRANGEBYSCORE', K_LEASED, '-inf', NOW_DIGITS, 'LIMIT', '0', ARGV[3])
if #expired > 0 then
  expect_zsets({ K_DEAD, K_READY, K_WAIT, K_HEADS })
  expect_types({ K_DEADREC, 'hash', K_HOSTDEAD, 'hash', K_WAKE, 'list' })
end
local requeued, died = reclaim_leases(expired, tonumber(ARGV[4]))
wake(requeued)
return reported({ requeued, died, redis.call('ZCOUNT', K_LEASED, '-inf', NOW_DIGITS) },
  requeued > 0 and NOW or -1)
