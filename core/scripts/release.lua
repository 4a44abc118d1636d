-- crawlq script: release
-- protocol: 1
-- flags: allow-oom
-- KEYS: the 12 queue keys (see common.lua)
-- ARGV: 1 base, 2 clock, 3 lease count N, then 1 field per lease: token
-- reply: {1|0, ...} one per lease: 1 released (back at the front of its lane, attempt count
--        unchanged), 0 the token is not live (stale: nothing changed)

local n = tonumber(ARGV[3])
local out, released = {}, 0
for i = 0, n - 1 do
  local token = ARGV[4 + i]
  local rec = redis.call('HGET', K_LEASES, token)
  if rec then
    redis.call('HDEL', K_LEASES, token)
    redis.call('ZREM', K_LEASED, token)
    enqueue_ready(rec, true)
    released = released + 1
    out[i + 1] = 1
  else
    out[i + 1] = 0
  end
end
counter('released_total', released)
wake(released)
return out
