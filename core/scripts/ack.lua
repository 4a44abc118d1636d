-- crawlq script: ack
-- protocol: 7
-- flags: allow-oom
-- KEYS: the queue's meta key (see common/1-prelude.lua)
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

-- The ack's steps (scripts.rs, STEPS_END): each call runs the body at the end.
local ACK = {}

-- When the acked items come back (nil: they are done), from the optional argument after the
-- n leases.
function ACK.revisit_time(argv, n)
  local revisit_arg = argv[4 + n * 4] or '0'
  if string.byte(revisit_arg, 1) == 64 then
    return math.max(tonumber(string.sub(revisit_arg, 2)) or NOW, NOW)
  elseif revisit_arg ~= '0' and (tonumber(revisit_arg) or 0) > 0 then
    return NOW + tonumber(revisit_arg)
  end
end

-- What an ack reads before it writes: its revisit time, whether any host has an adaptive
-- delay, whether any host counts leases in flight (FLIGHT.any), and the types of the keys it
-- writes after a write of its own. A call that seeds a page's links before it acks the page
-- (ack_seed, ack_seed_lease) asks first, so that a foreign value at one of these keys fails
-- the call before the seed changes anything; its ack then takes the same answers (a seed
-- changes none of them): read once per call (CALL).
function ACK.reads(argv)
  if ACK.call ~= CALL.serial then
    ACK.call = CALL.serial
    local revisit_at = ACK.revisit_time(argv, argv[3] + 0)
    ACK.revisit_at = revisit_at or false
    ACK.any_adaptive = redis.call('HLEN', K_ADAPTIVE) > 0
    ACK.flights = FLIGHT.any()
    if revisit_at then
      expect_zsets({ K_LEASED, K_DELAYED, K_HOSTITEMS })
      expect_types({ K_LEASES, 'hash', K_REVISITS, 'set', K_HOSTDELAYED, 'hash' })
    else
      -- (`leased`, its first write, is typed: a call that seeds first checks it itself)
      expect_types({ K_LEASES, 'hash', K_HOSTITEMS, 'zset' })
    end
  end
  return ACK.revisit_at or nil, ACK.any_adaptive, ACK.flights
end

-- Halve the host's adaptive extra delay (dropped under 50 ms).
function ACK.halve_adaptive(host)
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

-- A live lease has its key in `leased` and its record in `leases`. The keys are removed from
-- `leased` first: when every one was there (the usual case) they are all live and the call needs
-- no other read. Otherwise the records still in `leases` say which were (a lease given twice in
-- one call answers 1, then 0). `leases` was type-checked before that first write (ACK.reads),
-- so a foreign value at either key fails the call before anything changed. Fills `out` (1:
-- live, 0: not; one per lease key) and returns the records when they were read.
function ACK.remove_leases(n, lease_keys, records, out)
  local removed = 0
  for first = 1, n, 4000 do
    removed = removed + redis.call('ZREM', K_LEASED, unpack(lease_keys, first, math.min(first + 3999, n)))
  end
  local gone = lease_keys
  if removed == n then
    for i = 1, n do
      out[i] = 1
    end
  else
    records = records or call_chunked('HMGET', K_LEASES, lease_keys)
    local answered = {}
    gone = {}
    for i = 1, n do
      local lease_key = lease_keys[i]
      if records[i] and not answered[lease_key] then
        answered[lease_key] = true
        gone[#gone + 1] = lease_key
        out[i] = 1
      else
        out[i] = 0
      end
    end
  end
  call_chunked('HDEL', K_LEASES, gone)
  return records
end

--- per call ---
local n = ARGV[3] + 0
local revisit_at, any_adaptive, flights = ACK.reads(ARGV)
-- (an answer frees its host's in-flight slot: the prelude, FLIGHT.answered)
local level = current_level(seen_count())
local lease_keys = {}
for i = 0, n - 1 do
  lease_keys[i + 1] = ARGV[4 + i * 4]
end
local out = {}
local records
if revisit_at then
  -- the records are rebuilt for their revisit: read them (which also says which are live)
  -- (the keys it writes were checked with its reads: ACK.reads)
  records = call_chunked('HMGET', K_LEASES, lease_keys)
elseif CRAWL.on() then
  -- a named crawl's items are counted per crawl: their records say which
  records = call_chunked('HMGET', K_LEASES, lease_keys)
end
records = ACK.remove_leases(n, lease_keys, records, out)
local revisit_members, revisit_ids = {}, {}
-- items done per host (done_by_host[host], hosts in done_hosts in first-seen order), written to
-- the per-host counts once per host: the prelude's tally written out, because nearly every item
-- of an ack call is a host of its own (one per host per lease under politeness) and the call
-- per item measured 1.04x ack(100)'s instructions
local done_by_host, done_hosts, done_host_count, revisits_by_host = {}, {}, 0, {}
-- items done per named crawl, for its rates (CRAWL.recent, once per crawl)
local done_by_crawl = {}
local live_keys = level_keys(LIVE_PREFIX, 'v', level)
local level_size = live_keys.size
local acked = 0
for i = 0, n - 1 do
  if out[i + 1] == 1 then
    local a = 4 + i * 4
    local host = ARGV[a + 1]
    local again = records and records[i + 1] and revisit_at and rec_rebuild(records[i + 1], NOW, 0, nil, nil)
    local crawl = records and CRAWL.of(records[i + 1])
    CRAWL.count(crawl, 'leased', -1)
    CRAWL.count(crawl, again and 'delayed' or 'done', 1)
    if crawl and not again then
      tally(done_by_crawl, crawl, 1)
    end
    if again then
      revisit_members[#revisit_members + 1] = int(revisit_at)
      revisit_members[#revisit_members + 1] = again
      revisit_ids[#revisit_ids + 1] = rec_id(again)
      tally(revisits_by_host, host, 1)
    else
      -- the live member: an item older than the current level is looked for at its own level
      -- first (live_remove); most are at the current one, whose bucket keys are cached here
      local member, bucket_hash = ARGV[a + 2], ARGV[a + 3] + 0
      local id = level > 0 and tonumber(string.match(ARGV[a], ':(%d+)$'))
      if id and current_level(id) < level then
        live_remove(member, bucket_hash, level, id)
      else
        local bucket = bucket_hash % level_size
        -- (a bucket holding a foreign value is passed over: it holds no member)
        if redis.pcall('SREM', live_keys[bucket] or bucket_key(live_keys, bucket), member) ~= 1 and level > 0 then
          live_remove(member, bucket_hash, level - 1)
        end
      end
      local count = done_by_host[host]
      if count then
        done_by_host[host] = count + 1
      else
        done_by_host[host] = 1
        done_host_count = done_host_count + 1
        done_hosts[done_host_count] = host
      end
    end
    acked = acked + 1
    if flights then
      FLIGHT.answered(host, 1, ARGV[a])
    end
    if any_adaptive then
      ACK.halve_adaptive(host)
    end
  end
end
if #revisit_members > 0 then
  call_chunked('ZADD', K_DELAYED, revisit_members)
  call_chunked('SADD', K_REVISITS, revisit_ids)
end
for i = 1, done_host_count do
  local host = done_hosts[i]
  host_items_add(host, -done_by_host[host])
end
tally_flush(revisits_by_host, add_delayed)
for _, crawl in ipairs(done_by_crawl) do
  CRAWL.recent(crawl, 'd', done_by_crawl[crawl])
end
counter('done', acked)
counter('acked_total', acked)
return reported(out, #revisit_members > 0 and revisit_at or -1)
