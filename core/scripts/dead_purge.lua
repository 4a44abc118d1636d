-- crawlq script: dead_purge
-- protocol: 2
-- flags: allow-oom
-- KEYS: the 12 queue keys (see common.lua)
-- ARGV: 1 base, 2 clock
-- reply: number of dead letters removed
-- Purged items stay in the seen set: seeding them again needs force.

local count = redis.call('ZCARD', K_DEAD)
-- UNLINK would delete a foreign value at deadrec as well: check it first
expect_types({ K_DEADREC, 'hash' })
redis.call('UNLINK', K_DEAD, K_DEADREC)
counter('purged_total', count)
return count
