-- crawlq script: crawl_stats
-- protocol: 7
-- flags: no-writes
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 crawl name
-- reply: {ready, delayed, leased, dead, done, seen, seeded_total, cap, paused, held, weight, rate,
--        host budget, hosts, oldest pending age ms, deleting}: the named
--        crawl's counts in this base (`c:<crawl>`, docs/PROTOCOL.md section 1; 0 each for a
--        crawl with none), its cap share here (-1: none), whether it is paused (0/1) and how
--        many hosts are held for it (`ch:<crawl>`), its weight (`crawlweight`, 1 when absent) and
--        its rate share here (leases a second, as text; '' for none), its host budget
--        (`crawlseed`, -1: none), its hosts with ready items (`ci:<crawl>` fields) and the age
--        of the oldest head of its lanes (`cz:<crawl>`; -1: none), and whether it is marked as
--        being deleted (0/1: a deletion under way, or one stopped part-way)
-- Every script that moves a named crawl's record keeps these (CRAWL.count); `seen` counts the
-- URLs the crawl has in the seen set (its seeds add them, seen_forget takes them off).

local fields = redis.call('HMGET', BASE .. ':c:' .. ARGV[3], 'ready', 'delayed', 'leased', 'dead',
  'done', 'seen', 'seeded_total')
local out = {}
for i = 1, 7 do
  out[i] = tonumber(fields[i] or '0') or 0
end
-- (a foreign value at a limits key reads as no limits)
local cfg = redis.pcall('HGET', CRAWL.cfg_key(), ARGV[3])
local cap, paused, rate = string.match(type(cfg) == 'string' and cfg or '', '^(%d*):(%w*):?([%d.]*)$')
local held = redis.pcall('SCARD', CRAWL.held_set(ARGV[3]))
out[8] = tonumber(cap or '') or -1
-- ('d': being deleted, which leases nothing either)
out[9] = (paused == '1' or paused == 'd') and 1 or 0
out[10] = type(held) == 'number' and held or 0
local weight = redis.pcall('HGET', BASE .. ':crawlweight', ARGV[3])
out[11] = type(weight) == 'string' and tonumber(weight) or 1
-- (a decimal: as text, so Redis does not truncate it to an integer)
out[12] = rate or ''
local field = redis.pcall('HGET', CRAWL.seed_key(), ARGV[3])
local _, budget = CRAWL.seed_config(type(field) == 'string' and field or nil)
out[13] = budget or -1
local hosts = redis.pcall('HLEN', CRAWL.hosts_key(ARGV[3]))
out[14] = type(hosts) == 'number' and hosts or 0
local oldest = redis.pcall('ZRANGE', CRAWL.ages_key(ARGV[3]), '0', '0', 'WITHSCORES')
out[15] = type(oldest) == 'table' and oldest[2] and math.max(0, NOW - tonumber(oldest[2])) or -1
out[16] = paused == 'd' and 1 or 0
-- its items done and seeded in the clock's current minute and the one before (CRAWL.recent),
-- and the ms of the current minute gone by, from which a client reckons the last minute's rates
local minute = math.floor(NOW / 60000)
local recent = redis.pcall('HMGET', BASE .. ':cr:' .. ARGV[3], 'd:' .. minute, 'd:' .. (minute - 1),
  's:' .. minute, 's:' .. (minute - 1))
for i = 1, 4 do
  out[16 + i] = type(recent) == 'table' and tonumber(recent[i] or '0') or 0
end
out[21] = NOW - minute * 60000
return out
