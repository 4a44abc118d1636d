-- crawlq script: ack
-- protocol: 2
-- flags: allow-oom
-- KEYS: the queue's meta key (see common.lua)
-- ARGV: 1 base, 2 clock, 3 lease count N, then 4 fields per lease: lease key ('<token>:<id>'),
--       host key, live member, live bucket hash (see docs/PROTOCOL.md, "Live set"); then,
--       optionally, a revisit: a delay in ms ('0' or absent: none), or '@' and a time in ms
--       since the epoch (one already past: due at once)
-- reply: {1|0, ...} one per lease: 1 acked, 0 the lease is not live (stale token, or a token of
--        another item: nothing changed)
-- With a revisit, each acked item is done for now and comes back: its record (attempt reset
-- to 0, enqueued now) waits in `delayed` until the revisit is due and its id in `revisits`; it
-- stays in the live set, so seeding it meanwhile is a duplicate.
-- An ack also halves the host's adaptive extra delay (dropped under 50 ms): successes bring a
-- rate-limited host back to its normal pace.

local n = tonumber(ARGV[3])
-- revisit_at: when the acked items come back (nil: they are done)
local revisit_arg, revisit_at = ARGV[4 + n * 4] or '0', nil
if string.byte(revisit_arg, 1) == 64 then
  revisit_at = math.max(tonumber(string.sub(revisit_arg, 2)) or NOW, NOW)
elseif revisit_arg ~= '0' and (tonumber(revisit_arg) or 0) > 0 then
  revisit_at = NOW + tonumber(revisit_arg)
end
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
local records = revisit_at and call_chunked('HMGET', K_LEASES, lease_keys) or nil
if revisit_at then
  expect_types({ K_DELAYED, 'zset', K_REVISITS, 'set' })
end
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
local revisit_members, revisit_ids = {}, {}
-- items done per host, written to the per-host counts once per host
local done_by_host, revisits_by_host = {}, {}
for i = 0, n - 1 do
  if out[i + 1] == 1 then
    local a = 4 + i * 4
    local again = records and records[i + 1] and rec_rebuild(records[i + 1], NOW, 0, nil, nil)
    if again then
      revisit_members[#revisit_members + 1] = int(revisit_at)
      revisit_members[#revisit_members + 1] = again
      revisit_ids[#revisit_ids + 1] = rec_id(again)
      tally(revisits_by_host, ARGV[a + 1], 1)
    else
      live_remove(ARGV[a + 2], ARGV[a + 3] + 0, level)
      tally(done_by_host, ARGV[a + 1], -1)
    end
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
if #revisit_members > 0 then
  call_chunked('ZADD', K_DELAYED, revisit_members)
  call_chunked('SADD', K_REVISITS, revisit_ids)
end
host_items_flush(done_by_host)
tally_flush(revisits_by_host, add_delayed)
counter('done', acked)
counter('acked_total', acked)
return out
