-- crawlq script: ack
-- protocol: 2
-- flags: allow-oom
-- KEYS: the 12 queue keys (see common.lua)
-- ARGV: 1 base, 2 clock, 3 lease count N, then 4 fields per lease: lease key ('<token>:<id>'),
--       host key, live member, live bucket hash (see docs/PROTOCOL.md, "Live set")
-- reply: {1|0, ...} one per lease: 1 acked, 0 the lease is not live (stale token, or a token of
--        another item: nothing changed)
-- An ack also halves the host's adaptive extra delay (dropped under 50 ms): successes bring a
-- rate-limited host back to its normal pace.

local n = tonumber(ARGV[3])
local any_adaptive = redis.call('HLEN', K_ADAPTIVE) > 0
local level = current_level(seen_count())
-- One read says which leases are live (their key is in `leased`, as for extend), then one
-- multi-member delete each from `leases` and `leased`; only the live-set removals are per item.
-- The ZMSCORE is the first command on `leased` and the HDEL the first write, so a foreign value
-- at either key fails the call before anything changed.
local lease_keys = {}
for i = 0, n - 1 do
  lease_keys[i + 1] = ARGV[4 + i * 4]
end
local deadlines = call_chunked('ZMSCORE', K_LEASED, lease_keys)
local out, acked, gone, answered = {}, 0, {}, {}
for i = 1, n do
  local lease_key = lease_keys[i]
  if deadlines[i] and not answered[lease_key] then
    answered[lease_key] = true
    gone[#gone + 1] = lease_key
    out[i] = 1
  else
    out[i] = 0
  end
end
call_chunked('HDEL', K_LEASES, gone)
call_chunked('ZREM', K_LEASED, gone)
for i = 0, n - 1 do
  if out[i + 1] == 1 then
    local a = 4 + i * 4
    live_remove(ARGV[a + 2], tonumber(ARGV[a + 3]), level)
    acked = acked + 1
    if any_adaptive then
      local host = ARGV[a + 1]
      local extra = redis.call('HGET', K_ADAPTIVE, host)
      if extra then
        local halved = math.floor((tonumber(extra) or 0) / 2)
        if halved < 50 then
          redis.call('HDEL', K_ADAPTIVE, host)
        else
          redis.call('HSET', K_ADAPTIVE, host, int(halved))
        end
      end
    end
  end
end
counter('done', acked)
counter('acked_total', acked)
return out
