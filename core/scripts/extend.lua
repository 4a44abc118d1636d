-- crawlq script: extend
-- protocol: 7
-- flags: allow-oom
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 lease count N, then 2 fields per lease: lease key ('<token>:<id>'),
--       new ttl ms
-- reply: {expires_at|-1, ...} one per lease: the new deadline (now + ttl), or -1 when the lease
--        is not live (stale token, or a token of another item: nothing changed)

local n = tonumber(ARGV[3])
local out = {}
for i = 0, n - 1 do
  local lease_key, ttl = ARGV[4 + i * 2], tonumber(ARGV[5 + i * 2])
  -- a read before the first write checks the key's type
  if redis.call('ZSCORE', K_LEASED, lease_key) then
    redis.call('ZADD', K_LEASED, 'XX', int(NOW + ttl), lease_key)
    out[i + 1] = NOW + ttl
  else
    out[i + 1] = -1
  end
end
return out
