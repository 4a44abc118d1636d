-- crawlq script: seed
-- protocol: 2
-- flags: (none)
-- KEYS: the 12 queue keys (see common.lua)
-- ARGV: 1 base, 2 clock, 3 item count N, then 9 fields per item:
--       fingerprint (signed 64-bit decimal), bucket hash (unsigned 32-bit decimal), host key,
--       priority, delay ms, force (0/1), live member, live bucket hash, record tail (the
--       canonical record after "attempt":0)
-- reply: {status, added_ready, added_delayed, first_id}; status has one byte per item: 'a'
--        added, 'f' added again by force (seen before, and neither queued nor leased now),
--        'd' duplicate (not added: seen before without force, or queued or leased now);
--        added items got the record ids first_id, first_id + 1, ... in the order of the call

-- key prefix and bucket count per level of the seen set, built once per call
local level_prefix, level_size = {}, {}
for l = 0, SEEN_MAX_LEVEL do
  level_prefix[l] = BASE .. ':s:' .. l .. ':'
  level_size[l] = level_buckets(l)
end

local function seen_key(level, bucket_hash)
  return level_prefix[level] .. int(math.fmod(bucket_hash, level_size[level]))
end

local n = tonumber(ARGV[3])
local seen = seen_count()
local level, level_end = current_level(seen)
expect_types({ K_DELAYED, 'zset', K_READY, 'zset', K_WAIT, 'zset', K_HEADS, 'zset', K_WAKE, 'list' })

local next_id = tonumber(redis.call('HGET', K_META, 'ids') or '0')
local first_id = next_id + 1
-- the parts of every record around its id, built once per call
local rec_open, rec_ts = '{"v":1,"id":"', '","ts":' .. int(NOW) .. ',"host":"'
local status = {}
local added_ready, added_delayed, duplicates, seen_added = 0, 0, 0, 0
local lanes, lane_order = {}, {}
local hosts, host_order = {}, {}

for i = 0, n - 1 do
  local a = 4 + i * 9
  local fp, bucket_hash = ARGV[a], tonumber(ARGV[a + 1])
  local host, prio_digits, delay_digits, force = ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5] == '1'
  -- most items have the defaults: skip the string-to-number conversions for them
  local prio = prio_digits == '0' and 0 or tonumber(prio_digits)
  local delay = delay_digits == '0' and 0 or tonumber(delay_digits)

  local dup = false
  for l = 0, level - 1 do
    if redis.call('SISMEMBER', seen_key(l, bucket_hash), fp) == 1 then
      dup = true
      break
    end
  end
  if not dup then
    if redis.call('SADD', seen_key(level, bucket_hash), fp) == 1 then
      seen = seen + 1
      seen_added = seen_added + 1
      if seen >= level_end and level < SEEN_MAX_LEVEL then
        level = level + 1
        level_end = level_end + level_buckets(level) * SEEN_FILL
      end
    else
      dup = true
    end
  end

  local live_member, live_bucket = ARGV[a + 6], tonumber(ARGV[a + 7])
  if dup and (not force or is_live(live_member, live_bucket, level)) then
    status[#status + 1] = 'd'
    duplicates = duplicates + 1
  else
    status[#status + 1] = dup and 'f' or 'a'
    redis.call('SADD', live_key(level, live_bucket), live_member)
    next_id = next_id + 1
    local rec
    if prio == 0 then
      rec = rec_open .. int(next_id) .. rec_ts .. host .. '","attempt":0' .. ARGV[a + 8]
    else
      rec = rec_open .. int(next_id) .. rec_ts .. host .. '","priority":' .. prio_digits .. ',"attempt":0' .. ARGV[a + 8]
    end
    if delay > 0 then
      redis.call('ZADD', K_DELAYED, int(NOW + delay), rec)
      added_delayed = added_delayed + 1
    else
      local by_prio = lanes[host]
      if not by_prio then
        by_prio = {}
        lanes[host] = by_prio
      end
      local lane = by_prio[prio]
      if not lane then
        lane = { key = lane_key(host, prio), host = host, prio = prio, seq = next_id, recs = {} }
        by_prio[prio] = lane
        lane_order[#lane_order + 1] = lane
      end
      lane.recs[#lane.recs + 1] = rec
      if not hosts[host] then
        hosts[host] = {}
        host_order[#host_order + 1] = host
      end
      added_ready = added_ready + 1
    end
  end
end

-- One RPUSH per lane (in chunks that stay under Lua's unpack limit) instead of one per URL.
-- New items arrive with higher sequence numbers than anything queued, so only a new lane can
-- change its host's best head: existing lanes of a scheduled host need nothing but the push.
-- Only a new lane can mean a new host, so the host's priority set is only looked at then.
for _, lane in ipairs(lane_order) do
  local recs = lane.recs
  local len
  for first = 1, #recs, 4000 do
    len = redis.call('RPUSH', lane.key, unpack(recs, first, math.min(first + 3999, #recs)))
  end
  if len == #recs then
    -- a new lane: listed in its host's priorities, its head's age in heads
    local h = hosts[lane.host]
    local hp = hp_key(lane.host)
    if h.was_empty == nil then
      h.was_empty = redis.call('EXISTS', hp) == 0
    end
    redis.call('ZADD', hp, -lane.prio, lane.prio)
    redis.call('ZADD', K_HEADS, NOW_DIGITS, head_member(lane.host, lane.prio))
    local r = rank(lane.prio, lane.seq)
    if not h.rank or r < h.rank then
      h.rank = r
    end
  end
end
local new_hosts = 0
for _, host in ipairs(host_order) do
  local h = hosts[host]
  if h.rank then
    schedule(host, h.rank)
  end
  if h.was_empty then
    new_hosts = new_hosts + 1
  end
end

local added = added_ready + added_delayed
redis.call('HSETNX', K_META, 'format', PROTOCOL)
if added > 0 then
  redis.call('HSET', K_META, 'ids', int(next_id))
end
counter('seen', seen_added)
counter('ready', added_ready)
counter('hosts', new_hosts)
counter('seeded_total', added)
counter('duplicates_total', duplicates)
wake(added_ready)
return { table.concat(status), added_ready, added_delayed, first_id }
