-- crawlq script: stats
-- protocol: 7
-- flags: no-writes
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock
-- reply: {now, ready, hosts, done, seen, delayed, leased, dead, oldest_head_ts (-1 if none),
--         seeded_total, duplicates_total, leased_total, acked_total, nacked_total,
--         retried_total, reclaimed_total, released_total, dead_total, hosts_waiting,
--         over_budget_total, revisits (scheduled now), seen_cache_hits_total}
-- Read-only and O(1): counters kept by the other scripts plus ZCARDs. seen is meta.seen (every
-- member ever added) less meta.forgotten (removed by seen_forget); duplicates_total counts the
-- duplicates seeds sent (meta.duplicates_total) and those clients' caches answered
-- (meta.seen_cache_hits_total).

local f = redis.call('HMGET', K_META, 'ready', 'hosts', 'done', 'seen', 'seeded_total',
  'duplicates_total', 'leased_total', 'acked_total', 'nacked_total', 'retried_total',
  'reclaimed_total', 'released_total', 'dead_total', 'over_budget_total', 'forgotten',
  'seen_cache_hits_total')
local function num(v)
  return tonumber(v or '0')
end
local oldest = redis.call('ZRANGE', K_HEADS, '0', '0', 'WITHSCORES')
return {
  NOW, num(f[1]), num(f[2]), num(f[3]), num(f[4]) - num(f[15]),
  redis.call('ZCARD', K_DELAYED), redis.call('ZCARD', K_LEASED), redis.call('ZCARD', K_DEAD),
  oldest[2] and tonumber(oldest[2]) or -1,
  num(f[5]), num(f[6]) + num(f[16]), num(f[7]), num(f[8]), num(f[9]), num(f[10]), num(f[11]), num(f[12]),
  num(f[13]), redis.call('ZCARD', K_WAIT), num(f[14]), redis.call('SCARD', K_REVISITS),
  num(f[16]),
}
