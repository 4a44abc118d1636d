-- crawlq script: peek
-- protocol: 6
-- flags: no-writes
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 limit, 4 offset (optional: leasable hosts to skip, 0 when absent),
--       5 host (optional: list that host's ready items instead)
-- reply: {record1, record2, ...}: the head of each leasable host in the order lease would take
--        them (one per host), from the offset-th on, without leasing anything. Read-only:
--        delayed items and held-back hosts that became due are only promoted by lease.
--        With a host: its ready items in the order its leases would take them (best priority
--        first, then oldest), from its offset-th on, whether or not the host is due or paused.

local limit = tonumber(ARGV[3])
local offset = tonumber(ARGV[4] or '0')
local out = {}
if limit <= 0 then
  return out
end
if ARGV[5] then
  local host = ARGV[5]
  -- a host without a priority set has only its priority-0 lane; a listed priority whose lane
  -- is empty (a lease removes it from the set on its way) is passed over
  local priorities = redis.call('ZRANGE', hp_key(host), '0', '-1')
  if #priorities == 0 then
    priorities = { '0' }
  end
  local skip = offset
  for _, prio in ipairs(priorities) do
    local lane = lane_key(host, prio)
    local len = redis.call('LLEN', lane)
    if skip >= len then
      skip = skip - len
    else
      for _, record in ipairs(redis.call('LRANGE', lane, int(skip), int(skip + limit - #out - 1))) do
        out[#out + 1] = record
      end
      skip = 0
      if #out >= limit then
        break
      end
    end
  end
  return out
end
for _, host in ipairs(redis.call('ZRANGE', K_READY, int(offset), int(offset + limit - 1))) do
  -- (a host without a priority set has only its priority-0 lane)
  local top = redis.call('ZRANGE', hp_key(host), '0', '0')[1] or '0'
  local head = redis.call('LINDEX', lane_key(host, top), '0')
  if head then
    out[#out + 1] = head
  end
end
return out
