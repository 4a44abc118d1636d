#!lua name=crawlq_floor
-- The per-item Redis commands crawlq's layout needs, and nothing else: every key and member is
-- computed by the client, records come ready-made, no counters, checks or replies beyond what
-- the next call needs. `crawlq-bench cost` runs these next to crawlq's own seed, lease and ack
-- on the same URLs: the difference is crawlq's own Lua work, and these figures are the floor
-- of the layout (bench/README.md, "Where the remaining µs go, and the floors").
-- Keys: f:ready (zset host -> rank), f:l:<host> (lane), f:leases (hash), f:leased (zset),
-- f:heads (zset lane -> head age), f:hostitems (zset host -> minus its items); seen and live
-- buckets are named by the client.

-- ARGV: n, then per item: seen bucket key, fingerprint, live bucket key, live member, lane key,
-- host, record. Lifelong de-duplication, the live set, the host lane, the host's count.
redis.register_function('floor_seed', function(_, argv)
  local n = tonumber(argv[1])
  for i = 0, n - 1 do
    local a = 2 + i * 7
    redis.call('SADD', argv[a], argv[a + 1])
    redis.call('SADD', argv[a + 2], argv[a + 3])
    redis.call('RPUSH', argv[a + 4], argv[a + 6])
    redis.call('ZINCRBY', 'f:hostitems', '-1', argv[a + 5])
  end
  return n
end)

-- ARGV: n, lease deadline. Pop the best host, pop its lane, read the lane's next head (its id
-- is the host's next rank), put the host back; then the leases and the lanes' head ages, one
-- multi-member call each. Replies lease key, record, ...
redis.register_function('floor_lease', function(_, argv)
  local n = tonumber(argv[1])
  local out, fields, leased, heads = {}, {}, {}, {}
  for i = 1, n do
    local popped = redis.call('ZPOPMIN', 'f:ready')
    if #popped == 0 then
      break
    end
    local host = popped[1]
    local lane = 'f:l:' .. host
    local rec = redis.call('LPOP', lane)
    local following = redis.call('LINDEX', lane, 0)
    if following then
      local _, _, id, ts = string.find(following, '^{"v":1,"id":"(%d+)","ts":(%d+)')
      redis.call('ZADD', 'f:ready', id, host)
      heads[#heads + 1] = ts
      heads[#heads + 1] = host
    end
    local key = popped[2] .. ':' .. i
    fields[#fields + 1] = key
    fields[#fields + 1] = rec
    leased[#leased + 1] = argv[2]
    leased[#leased + 1] = key
    out[#out + 1] = key
    out[#out + 1] = rec
  end
  if #fields > 0 then
    redis.call('HSET', 'f:leases', unpack(fields))
    redis.call('ZADD', 'f:leased', unpack(leased))
  end
  if #heads > 0 then
    redis.call('ZADD', 'f:heads', unpack(heads))
  end
  return out
end)

-- ARGV: n, then per lease: lease key, live bucket key, live member, host. Drop the leases (one
-- multi-member call each: the removal from `leased` is the fencing check, its count says
-- whether all were live), then per item the live member and the host's count.
redis.register_function('floor_ack', function(_, argv)
  local n = tonumber(argv[1])
  local keys = {}
  for i = 0, n - 1 do
    keys[i + 1] = argv[2 + i * 4]
  end
  redis.call('ZREM', 'f:leased', unpack(keys))
  redis.call('HDEL', 'f:leases', unpack(keys))
  for i = 0, n - 1 do
    local a = 2 + i * 4
    redis.call('SREM', argv[a + 1], argv[a + 2])
    redis.call('ZINCRBY', 'f:hostitems', '1', argv[a + 3])
  end
  return n
end)

-- The semantic floor: only what exact lifelong de-duplication, politeness inside the lease,
-- fencing and taking back expired leases need, with none of crawlq's other promises (no live
-- set, so a forced seed could queue an item twice; no per-host counts; no exact priority FIFO
-- across hosts, so no read of a lane's next head; no head ages, no counters).

-- ARGV: n, then per item: seen bucket key, fingerprint, lane key, record. A URL seen before is
-- not queued again.
redis.register_function('floor_seed_min', function(_, argv)
  local n = tonumber(argv[1])
  for i = 0, n - 1 do
    local a = 2 + i * 4
    if redis.call('SADD', argv[a], argv[a + 1]) == 1 then
      redis.call('RPUSH', argv[a + 2], argv[a + 3])
    end
  end
  return n
end)

-- ARGV: n, lease deadline, score hosts go back to `ready` with. Pop due hosts (one ZPOPMIN
-- per call), one item of each (politeness: one lease per host per pop), the hosts back in one
-- ZADD; the leases with their fencing tokens and deadlines, one multi-member call each.
redis.register_function('floor_lease_min', function(_, argv)
  local n = tonumber(argv[1])
  local out, fields, leased, back = {}, {}, {}, {}
  local token = redis.call('HINCRBY', 'f:meta', 'token', n) - n
  local count = 0
  -- pop again while leases are still wanted: hosts found empty are dropped
  while count < n do
    local popped = redis.call('ZPOPMIN', 'f:ready', n - count)
    if #popped == 0 then
      break
    end
    for i = 1, #popped, 2 do
      local host = popped[i]
      local rec = redis.call('LPOP', 'f:l:' .. host)
      if rec then
        count = count + 1
        local key = (token + count) .. ':' .. i
        fields[#fields + 1] = key
        fields[#fields + 1] = rec
        leased[#leased + 1] = argv[2]
        leased[#leased + 1] = key
        back[#back + 1] = argv[3]
        back[#back + 1] = host
        out[#out + 1] = key
        out[#out + 1] = rec
      end
    end
    if #back > 0 then
      redis.call('ZADD', 'f:ready', unpack(back))
      back = {}
    end
  end
  if #fields > 0 then
    redis.call('HSET', 'f:leases', unpack(fields))
    redis.call('ZADD', 'f:leased', unpack(leased))
  end
  return out
end)

-- ARGV: n, then per lease: lease key. The fencing check is the removal from `leased` (a stale
-- key removes nothing); the records go with one HDEL.
redis.register_function('floor_ack_min', function(_, argv)
  local n = tonumber(argv[1])
  local keys = {}
  for i = 1, n do
    keys[i] = argv[1 + i]
  end
  local removed = redis.call('ZREM', 'f:leased', unpack(keys))
  redis.call('HDEL', 'f:leases', unpack(keys))
  return removed
end)
