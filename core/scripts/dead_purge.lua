-- crawlq script: dead_purge
-- protocol: 4
-- flags: allow-oom
-- KEYS: the queue's meta key (see common.lua)
-- ARGV: 1 base, 2 clock
-- reply: number of dead letters removed
-- Purged items stay in the seen set: seeding them again needs force.

local count = redis.call('ZCARD', K_DEAD)
-- UNLINK would delete a foreign value at deadrec as well: check it first
expect_types({ K_DEADREC, 'hash' })
-- the purged items leave their hosts' counts: one step per host with dead letters
local per_host = redis.call('HGETALL', K_HOSTDEAD)
for i = 1, #per_host, 2 do
  host_items_add(per_host[i], -tonumber(per_host[i + 1]))
end
redis.call('UNLINK', K_DEAD, K_DEADREC, K_HOSTDEAD)
counter('purged_total', count)
return count
