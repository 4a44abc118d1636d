-- crawlq script: leased_list
-- protocol: 7
-- flags: no-writes
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 offset, 4 limit
-- reply: {now, total, lease_key1, deadline1, record1, lease_key2, ...}: the leases held now
--        (`leased`, expired ones not reclaimed yet included: their deadline is before now),
--        soonest deadline first, from the offset-th on; a lease whose record is missing from
--        `leases` answers record ''
-- What workers hold, for an operator: the web console's leased page.

local offset, limit = tonumber(ARGV[3]), tonumber(ARGV[4])
local out = { NOW, redis.call('ZCARD', K_LEASED) }
if limit <= 0 then
  return out
end
local page = redis.call('ZRANGE', K_LEASED, offset, offset + limit - 1, 'WITHSCORES')
for i = 1, #page, 2 do
  out[#out + 1] = page[i]
  out[#out + 1] = tonumber(page[i + 1])
  out[#out + 1] = redis.call('HGET', K_LEASES, page[i]) or ''
end
return out
