-- crawlq script: crawl_config
-- protocol: 7
-- flags: allow-oom
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 crawl name, 4 change: 'cap' (ARGV 5: this shard's share of the
--       crawl's cap as digits, '' for none), 'rate' (ARGV 5: this shard's share of the crawl's
--       rate, leases a second as a decimal number, '' for none), 'weight' (ARGV 5: the crawl's weight as digits,
--       '' for the default, 1), 'budget' (ARGV 5: the most new URLs each host may add to the
--       crawl, as digits, '' for none), 'pause', 'resume', or '' (none: only release)
-- reply: {hosts released, hosts still held for the crawl, cap (-1: none), paused (0/1)}
-- (A rate holds no host for long: a host whose lanes are held back by rates waits in `wait`
-- until the earliest may lease again.)
-- A crawl's limits in this shard (common/7-crawl-limits.lua): the change is written, then, if
-- the crawl is not blocked now, at most 250 of the hosts held for it go back to `ready` (the
-- client calls again with no change while some are left). A crawl with no cap and no pause
-- loses its field, so a shard with no limits left reads nothing more for them.

local crawl, change = ARGV[3], ARGV[4]
expect_types({ CRAWL.cfg_key(), 'hash', CRAWL.held_key(), 'hash', CRAWL.held_set(crawl), 'set',
  BASE .. ':crawlweight', 'hash', CRAWL.seed_key(), 'hash' })
local stored = redis.call('HGET', CRAWL.cfg_key(), crawl)
if change ~= '' and stored and string.match(stored, ':d$') then
  fail('REFUSED', 'crawl ' .. crawl .. ' is being deleted: its limits cannot change (a deletion that was stopped ends when the crawl is deleted again)')
end
if change == 'weight' then
  -- (a weight changes the tags of items queued from now on: CRAWL.tag)
  if ARGV[5] == '' or ARGV[5] == '1' then
    redis.call('HDEL', BASE .. ':crawlweight', crawl)
  else
    redis.call('HSET', BASE .. ':crawlweight', crawl, ARGV[5])
  end
  change = ''
elseif change == 'budget' then
  -- (checked by the seeds from now on; `cu:<crawl>` keeps its counts when the budget goes, as
  -- `hostused` does)
  local gen = CRAWL.seed_config(redis.call('HGET', CRAWL.seed_key(), crawl))
  CRAWL.write_seed_config(crawl, gen, ARGV[5] ~= '' and ARGV[5] + 0)
  change = ''
end
local s = CRAWL.limits_of(crawl) or { leased = tonumber(redis.call('HGET', BASE .. ':c:' .. crawl, 'leased') or '0') or 0 }
if change == 'cap' then
  s.cap = ARGV[5] ~= '' and tonumber(ARGV[5]) or nil
elseif change == 'rate' then
  s.rate = ARGV[5] ~= '' and tonumber(ARGV[5]) or nil
  if not s.rate then
    redis.call('HDEL', BASE .. ':crawltat', crawl)
  end
elseif change == 'pause' then
  s.paused = true
elseif change == 'resume' then
  s.paused = false
end
CRAWL.state[crawl] = s
if change ~= '' then
  if s.cap or s.paused or s.rate then
    redis.call('HSET', CRAWL.cfg_key(), crawl, (s.cap and int(s.cap) or '') .. ':' .. (s.paused and '1' or '')
      .. (s.rate and ':' .. string.format('%.17g', s.rate) or ''))
  else
    redis.call('HDEL', CRAWL.cfg_key(), crawl)
  end
end
local released, left = 0, redis.call('SCARD', CRAWL.held_set(crawl))
if left > 0 then
  expect_types({ K_READY, 'zset', K_WAIT, 'zset', K_WAKE, 'list' })
  released, left = CRAWL.release(crawl, 250)
end
return reported({ released, left, s.cap or -1, s.paused and 1 or 0 }, released > 0 and NOW or -1)
