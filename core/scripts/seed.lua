-- crawlq script: seed
-- protocol: 1
-- flags: (none)
-- KEYS: the 12 queue keys (see common.lua)
-- ARGV: 1 base, 2 clock, 3 item count N, then 7 fields per item:
--       fingerprint (signed 64-bit decimal), bucket hash (unsigned 32-bit decimal), host key,
--       priority, delay ms, force (0/1), record tail (the canonical record after "attempt":0)
-- reply: {status, added_ready, added_delayed}; status has one byte per item: 'a' added,
--        'f' added again by force although already seen, 'd' duplicate (not added)

-- The seen set is split in levels of small integer sets (Redis intsets: 8 bytes per
-- fingerprint). Level l has 1024 * 8^l buckets and takes fingerprints until it holds 384 per
-- bucket on average, which keeps every bucket under the default set-max-intset-entries (512).
-- Earlier levels are only read, so a level never has to be rehashed.
local SEEN_BASE_BUCKETS, SEEN_GROWTH, SEEN_FILL, SEEN_MAX_LEVEL = 1024, 8, 384, 7

local function seen_buckets(level)
  return SEEN_BASE_BUCKETS * SEEN_GROWTH ^ level
end

local function seen_key(level, bucket_hash)
  return BASE .. ':s:' .. level .. ':' .. int(math.fmod(bucket_hash, seen_buckets(level)))
end

local n = tonumber(ARGV[3])
local seen = tonumber(redis.call('HGET', K_META, 'seen') or '0')
local level, level_end = 0, seen_buckets(0) * SEEN_FILL
while seen >= level_end and level < SEEN_MAX_LEVEL do
  level = level + 1
  level_end = level_end + seen_buckets(level) * SEEN_FILL
end

local next_id = tonumber(redis.call('HGET', K_META, 'ids') or '0')
local status = {}
local added_ready, added_delayed, duplicates, seen_added = 0, 0, 0, 0
local lanes, lane_order = {}, {}
local hosts, host_order = {}, {}

for i = 0, n - 1 do
  local a = 4 + i * 7
  local fp, bucket_hash = ARGV[a], tonumber(ARGV[a + 1])
  local host, prio, delay, force = ARGV[a + 2], tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), ARGV[a + 5] == '1'

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
        level_end = level_end + seen_buckets(level) * SEEN_FILL
      end
    else
      dup = true
    end
  end

  if dup and not force then
    status[#status + 1] = 'd'
    duplicates = duplicates + 1
  else
    status[#status + 1] = dup and 'f' or 'a'
    next_id = next_id + 1
    local rec = rec_prefix(int(next_id), NOW, host, prio, 0) .. ARGV[a + 6]
    if delay > 0 then
      redis.call('ZADD', K_DELAYED, NOW + delay, rec)
      added_delayed = added_delayed + 1
    else
      local lk = lane_key(host, prio)
      local lane = lanes[lk]
      if not lane then
        lane = { host = host, prio = prio, seq = next_id, recs = {} }
        lanes[lk] = lane
        lane_order[#lane_order + 1] = lk
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
for _, host in ipairs(host_order) do
  hosts[host].was_empty = redis.call('EXISTS', hp_key(host)) == 0
end
for _, lk in ipairs(lane_order) do
  local lane = lanes[lk]
  local recs = lane.recs
  for first = 1, #recs, 4000 do
    redis.call('RPUSH', lk, unpack(recs, first, math.min(first + 3999, #recs)))
  end
  redis.call('ZADD', hp_key(lane.host), -lane.prio, lane.prio)
  local h = hosts[lane.host]
  local r = rank(lane.prio, lane.seq)
  if not h.rank or r < h.rank then
    h.rank = r
  end
end
local new_hosts = 0
for _, host in ipairs(host_order) do
  local h = hosts[host]
  -- New items arrive with higher sequence numbers than anything already queued, so the host's
  -- best head only changes when a lane is new: ZADD LT keeps the rank exact.
  schedule(host, h.rank)
  if h.was_empty then
    new_hosts = new_hosts + 1
    redis.call('ZADD', K_HEADS, NOW, host)
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
return { table.concat(status), added_ready, added_delayed }
