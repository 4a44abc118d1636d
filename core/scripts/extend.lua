-- crawlq script: extend
-- protocol: 1
-- flags: allow-oom
-- KEYS: the 12 queue keys (see common.lua)
-- ARGV: 1 base, 2 clock, 3 lease count N, then 2 fields per lease: token, new ttl ms
-- reply: {expires_at|-1, ...} one per lease: the new deadline (now + ttl), or -1 when the token
--        is not live (stale: nothing changed)

local n = tonumber(ARGV[3])
local out = {}
for i = 0, n - 1 do
  local token, ttl = ARGV[4 + i * 2], tonumber(ARGV[5 + i * 2])
  if redis.call('ZSCORE', K_LEASED, token) then
    redis.call('ZADD', K_LEASED, 'XX', int(NOW + ttl), token)
    out[i + 1] = NOW + ttl
  else
    out[i + 1] = -1
  end
end
return out
