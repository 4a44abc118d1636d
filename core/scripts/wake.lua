-- crawlq script: wake
-- protocol: 5
-- flags: allow-oom
-- KEYS: the meta key of the queue's own base <prefix>:{<queue>} (see common.lua)
-- ARGV: 1 base, 2 call flags and clock, 3 markers to push
-- reply: 1
-- A queue of several shards has one wake list for all of them, in its own slot: after a call
-- that made items ready in a shard, the client pushes markers here (a script cannot reach
-- another slot), so a lease blocked on every shard at once wakes.

wake(tonumber(ARGV[3]))
return 1
