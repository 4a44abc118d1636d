-- crawlq script: shards
-- protocol: 7
-- flags: allow-oom
-- KEYS: the meta key of the queue's own base <prefix>:{<queue>} (see common/1-prelude.lua)
-- ARGV: 1 base, 2 call flags and clock, 3 shards asked for (0: whatever the queue has), 4
--       optionally '1': refuse a server that may evict the queue's keys (a client's first call)
-- reply: {the queue's shard count (0 for a queue nobody created yet: nothing stored), its
--        shards' tags: 'spread' (protocol 5) or '' (<queue>:<shard>, protocol 4)}
-- The first client that asks for a count fixes it (meta.shards); a queue that already holds
-- data without it (meta.format of the one-shard layout) has one shard. A new queue of several
-- shards gets the spread tags and meta.format 5 on its home, which protocol 4 clients refuse
-- (they would look for its shards under the other tags).

-- A server that evicts any key when full (an allkeys-* maxmemory-policy with a maxmemory set)
-- could drop the queue's items and seen set without a trace: CRAWLQ_CONFIG, nothing written.
-- A user whose ACL refuses INFO is not checked.
if ARGV[4] == '1' then
  local info = redis.pcall('INFO', 'memory')
  if type(info) == 'string' then
    local policy = string.match(info, 'maxmemory_policy:([%w-]+)')
    local limit = string.match(info, 'maxmemory:(%d+)')
    if policy and string.sub(policy, 1, 8) == 'allkeys-' and limit and limit ~= '0' then
      fail('CONFIG', 'the Redis server evicts keys when its memory is full (maxmemory-policy '
        .. policy .. ', maxmemory ' .. limit .. ' bytes): it could drop queued URLs and the '
        .. 'seen set without a trace; set maxmemory-policy to noeviction (or a volatile-* '
        .. 'policy), or open the queue with allow_eviction (allowEviction in JavaScript)')
    end
  end
end
local asked = tonumber(ARGV[3])
local stored = redis.call('HMGET', K_META, 'shards', 'tags')
if stored[1] then
  return { tonumber(stored[1]), stored[2] or '' }
end
if STORED_FORMAT then
  return { 1, '' }
end
if asked > 1 then
  redis.call('HSET', K_META, 'shards', asked, 'tags', 'spread', 'format', '5')
  return { asked, 'spread' }
end
if asked > 0 then
  redis.call('HSET', K_META, 'shards', asked)
end
return { asked, '' }
