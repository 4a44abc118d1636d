-- crawlq script: shards
-- protocol: 4
-- flags: allow-oom
-- KEYS: the meta key of the queue's own base <prefix>:{<queue>} (see common.lua)
-- ARGV: 1 base, 2 call flags and clock, 3 shards asked for (0: whatever the queue has)
-- reply: the queue's shard count, or 0 for a queue nobody created yet (nothing stored)
-- The first client that asks for a count fixes it (meta.shards); a queue that already holds
-- data without it (meta.format of the one-shard layout) has one shard.

local asked = tonumber(ARGV[3])
local stored = redis.call('HGET', K_META, 'shards')
if stored then
  return tonumber(stored)
end
if STORED_FORMAT then
  return 1
end
if asked > 0 then
  redis.call('HSET', K_META, 'shards', asked)
end
return asked
