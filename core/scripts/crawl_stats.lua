-- crawlq script: crawl_stats
-- protocol: 7
-- flags: no-writes
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 crawl name
-- reply: {ready, delayed, leased, dead, done, seen, seeded_total}: the named crawl's counts in
--        this base (`c:<crawl>`, docs/PROTOCOL.md section 1); 0 each for a crawl with none
-- Every script that moves a named crawl's record keeps these (CRAWL.count); `seen` counts the
-- URLs the crawl added, forgotten ones included (seen_forget does not know their crawl).

local fields = redis.call('HMGET', BASE .. ':c:' .. ARGV[3], 'ready', 'delayed', 'leased', 'dead',
  'done', 'seen', 'seeded_total')
local out = {}
for i = 1, 7 do
  out[i] = tonumber(fields[i] or '0') or 0
end
return out
