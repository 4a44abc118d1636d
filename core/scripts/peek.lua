-- crawlq script: peek
-- protocol: 6
-- flags: no-writes
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 limit, 4 offset (optional: leasable hosts to skip, 0 when absent)
-- reply: {record1, record2, ...}: the head of each leasable host in the order lease would take
--        them (one per host), from the offset-th on, without leasing anything. Read-only:
--        delayed items and held-back hosts that became due are only promoted by lease.

local limit = tonumber(ARGV[3])
local offset = tonumber(ARGV[4] or '0')
local out = {}
if limit <= 0 then
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
