-- crawlq script: release
-- protocol: 7
-- flags: allow-oom
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 lease count N, then 2 fields per lease: lease key ('<token>:<id>'),
--       payload (canonical JSON stored in place of the item's payload, '' keeps it)
-- reply: {1|0, ...} one per lease: 1 released (back at the front of its lane, attempt count
--        and enqueue time unchanged), 0 the lease is not live (stale token, or a token of
--        another item: nothing changed)

local n = tonumber(ARGV[3])
expect_types({ K_LEASES, 'hash', K_LEASED, 'zset', K_READY, 'zset', K_WAIT, 'zset', K_HEADS, 'zset',
  K_DEAD, 'zset', K_DEADREC, 'hash', K_WAKE, 'list', K_HOSTDEAD, 'hash' })
-- One read fetches every lease's record; the leases are removed with one call each at the end.
local lease_keys = {}
for i = 0, n - 1 do
  lease_keys[i + 1] = ARGV[4 + i * 2]
end
local recs = call_chunked('HMGET', K_LEASES, lease_keys)
local out, released, level, gone, answered = {}, 0, nil, {}, {}
-- an answer frees its host's in-flight slot (the prelude, FLIGHT.answered)
local flights = FLIGHT.any()
for i = 0, n - 1 do
  local lease_key, payload = lease_keys[i + 1], ARGV[5 + i * 2]
  local rec = recs[i + 1]
  if rec and not answered[lease_key] then
    answered[lease_key] = true
    gone[#gone + 1] = lease_key
    CRAWL.count(CRAWL.of(rec), 'leased', -1)
    if flights then
      local _, _, host = rec_head(rec)
      if host then
        FLIGHT.answered(host, 1, lease_key)
      end
    end
    if payload ~= '' then
      local _, ts, _, _, attempt = rec_head(rec)
      rec = ts and rec_rebuild(rec, ts, attempt, nil, payload) or rec
    end
    if enqueue_ready(rec, true) then
      released = released + 1
    else
      -- a record no script can read (or whose lane holds a foreign value) goes to dead
      -- letters as it is
      level = level or current_level(seen_count())
      live_remove_rec(rec, level)
      to_dead(lease_key_id(lease_key), rec)
    end
    out[i + 1] = 1
  else
    out[i + 1] = 0
  end
end
call_chunked('HDEL', K_LEASES, gone)
call_chunked('ZREM', K_LEASED, gone)
counter('released_total', released)
wake(released)
return reported(out, released > 0 and NOW or -1)
