-- crawlq script: ack
-- protocol: 1
-- flags: allow-oom
-- KEYS: the 12 queue keys (see common.lua)
-- ARGV: 1 base, 2 clock, 3 lease count N, then 2 fields per lease: token, host key
-- reply: {1|0, ...} one per lease: 1 acked, 0 the token is not live (stale: nothing changed)
-- An ack also halves the host's adaptive extra delay (dropped under 50 ms): successes bring a
-- rate-limited host back to its normal pace.

local n = tonumber(ARGV[3])
local any_adaptive = redis.call('EXISTS', K_ADAPTIVE) == 1
local out, acked = {}, 0
for i = 0, n - 1 do
  local token, host = ARGV[4 + i * 2], ARGV[5 + i * 2]
  if redis.call('HDEL', K_LEASES, token) == 1 then
    redis.call('ZREM', K_LEASED, token)
    acked = acked + 1
    out[i + 1] = 1
    if any_adaptive then
      local extra = redis.call('HGET', K_ADAPTIVE, host)
      if extra then
        local halved = math.floor(tonumber(extra) / 2)
        if halved < 50 then
          redis.call('HDEL', K_ADAPTIVE, host)
        else
          redis.call('HSET', K_ADAPTIVE, host, int(halved))
        end
      end
    end
  else
    out[i + 1] = 0
  end
end
counter('done', acked)
counter('acked_total', acked)
return out
