-- crawlq script: reclaim
-- protocol: 1
-- flags: allow-oom
-- KEYS: the 12 queue keys (see common.lua)
-- ARGV: 1 base, 2 clock, 3 limit (expired leases handled in this call), 4 max attempts
-- reply: {requeued, dead, remaining_expired}
-- The same recovery also runs, bounded, at the start of every lease call.

local requeued, died = reclaim_expired(tonumber(ARGV[3]), tonumber(ARGV[4]))
wake(requeued)
return { requeued, died, redis.call('ZCOUNT', K_LEASED, '-inf', NOW_DIGITS) }
