-- crawlq script: seed
-- protocol: 4
-- flags: (none)
-- KEYS: the queue's meta key (see common.lua)
-- ARGV: 1 base, 2 clock, 3 item count N, then 9 fields per item:
--       fingerprint (signed 64-bit decimal), bucket hash (unsigned 32-bit decimal), host key,
--       priority, delay ms, force (0/1), live member, live bucket hash, record tail (the
--       canonical record after its ts: its host unless the URL spells it, its priority unless
--       0, then its url, key and payload)
-- reply: {status, added_ready, added_delayed, first_id}; status has one byte per item: 'a'
--        added, 'f' added again by force (seen before, and neither queued nor leased now),
--        'd' duplicate (not added: seen before without force, or queued or leased now),
--        'b' over its host's budget (not added, not marked seen); added items got the record
--        ids first_id, first_id + 1, ... in the order of the call
-- Budgets: while the queue has a default budget (meta.budget) or any host one (hostbudget),
-- every new URL ('a') counts in hostused[host]; a new URL of a host whose count has reached
-- its budget (its own, else the default) is refused. Forced re-adds ('f') neither count nor
-- are refused.

local n = ARGV[3] + 0
local seen = seen_count()
local level, level_end = current_level(seen)
expect_types({ K_DELAYED, 'zset', K_READY, 'zset', K_WAIT, 'zset', K_HEADS, 'zset', K_WAKE, 'list' })

local ids_digits, default_budget = unpack(redis.call('HMGET', K_META, 'ids', 'budget'))
local next_id = ids_digits and ids_digits + 0 or 0
local budgets = default_budget ~= false or redis.call('HLEN', K_HOSTBUDGET) > 0
if budgets then
  expect_types({ K_HOSTBUDGET, 'hash', K_HOSTUSED, 'hash' })
end
-- per host of this call while budgets are on: URLs it may still add (false: no budget), and
-- how many it added
local budget_left, budget_used, budget_hosts = {}, {}, {}
local function left_for(host)
  local left = budget_left[host]
  if left == nil then
    local limit = redis.call('HGET', K_HOSTBUDGET, host) or default_budget
    left = false
    if limit then
      left = math.max(tonumber(limit) - tonumber(redis.call('HGET', K_HOSTUSED, host) or '0'), 0)
    end
    budget_left[host] = left
    budget_used[host] = 0
    budget_hosts[#budget_hosts + 1] = host
  end
  return left
end
local first_id = next_id + 1
-- the parts of every record around its id, built once per call; the ids' digits (common.lua's
-- number_digits)
local rec_open, rec_ts = '{"v":1,"id":"', '","ts":' .. NOW_DIGITS
local id_digits = {}
local status = {}
local added_ready, added_delayed, duplicates, seen_added, refused = 0, 0, 0, 0, 0
-- Lanes pushed to by this call, in first-seen order, as flat arrays (a table per lane costs
-- more than the push when most lanes get one item): index by head member, then host,
-- priority, first record id, and the records (a string while there is one, then a list).
local lane_index, lane_count = {}, 0
local lane_host, lane_prio, lane_seq, lane_recs = {}, {}, {}, {}
-- Hosts of those lanes, in first-seen order; best new rank per host (false: none yet).
local host_rank, host_order, host_count = {}, {}, 0
-- items added per host, and the delayed ones, for the per-host counts (tallies)
local host_added, host_delayed = {}, {}
-- the bucket keys of the current level (common.lua's level_keys)
local seen_keys, live_keys = level_keys(SEEN_PREFIX, 's', level), level_keys(LIVE_PREFIX, 'v', level)
local level_size = seen_keys.size

for i = 0, n - 1 do
  local a = 4 + i * 9
  local fp, bucket_hash, host = ARGV[a], ARGV[a + 1] + 0, ARGV[a + 2]

  local dup = false
  for l = 0, level - 1 do
    if redis.call('SISMEMBER', seen_key(l, bucket_hash), fp) == 1 then
      dup = true
      break
    end
  end
  local over = false
  if not dup then
    local bucket = bucket_hash % level_size
    local key = seen_keys[bucket] or bucket_key(seen_keys, bucket)
    if budgets and left_for(host) == 0 then
      -- a new URL past the budget is not marked seen, so it can come in once the budget grows
      if redis.call('SISMEMBER', key, fp) == 1 then
        dup = true
      else
        over = true
      end
    elseif redis.call('SADD', key, fp) == 1 then
      seen = seen + 1
      seen_added = seen_added + 1
      if seen >= level_end and level < SEEN_MAX_LEVEL then
        level = level + 1
        level_end = level_end + level_buckets(level) * SEEN_FILL
        seen_keys, live_keys = level_keys(SEEN_PREFIX, 's', level), level_keys(LIVE_PREFIX, 'v', level)
        level_size = seen_keys.size
      end
      if budgets then
        budget_used[host] = budget_used[host] + 1
        if budget_left[host] then
          budget_left[host] = budget_left[host] - 1
        end
      end
    else
      dup = true
    end
  end

  if over then
    status[i + 1] = 'b'
    refused = refused + 1
  elseif dup and (ARGV[a + 5] ~= '1' or is_live(ARGV[a + 6], ARGV[a + 7] + 0, level)) then
    status[i + 1] = 'd'
    duplicates = duplicates + 1
  else
    status[i + 1] = dup and 'f' or 'a'
    local live_bucket = (ARGV[a + 7] + 0) % level_size
    redis.call('SADD', live_keys[live_bucket] or bucket_key(live_keys, live_bucket), ARGV[a + 6])
    next_id = next_id + 1
    local id_prefix, id_suffix = number_digits(id_digits, next_id)
    local prio_digits = ARGV[a + 3]
    local rec = rec_open .. id_prefix .. id_suffix .. rec_ts .. ARGV[a + 8]
    tally(host_added, host, 1)
    local delay_digits = ARGV[a + 4]
    if delay_digits ~= '0' and delay_digits + 0 > 0 then
      redis.call('ZADD', K_DELAYED, int(NOW + delay_digits), rec)
      added_delayed = added_delayed + 1
      tally(host_delayed, host, 1)
    else
      local member = host
      if prio_digits ~= '0' then
        member = prio_digits .. ':' .. host
      end
      local li = lane_index[member]
      if not li then
        lane_count = lane_count + 1
        lane_index[member] = lane_count
        lane_host[lane_count], lane_prio[lane_count] = host, prio_digits == '0' and 0 or prio_digits + 0
        lane_seq[lane_count], lane_recs[lane_count] = next_id, rec
        if host_rank[host] == nil then
          host_rank[host] = false
          host_count = host_count + 1
          host_order[host_count] = host
        end
      else
        local recs = lane_recs[li]
        if type(recs) == 'string' then
          lane_recs[li] = { recs, rec }
        else
          recs[#recs + 1] = rec
        end
      end
      added_ready = added_ready + 1
    end
  end
end

-- One RPUSH per lane (in chunks that stay under Lua's unpack limit) instead of one per URL.
-- New items arrive with higher sequence numbers than anything queued, so only a new lane can
-- change its host's best head: existing lanes of a scheduled host need nothing but the push.
-- Only a new lane can mean a new host, so the host's priorities are only looked at then.
local host_was_empty = {}
local lane_prefix_0 = BASE .. ':l:0:'
-- the new lanes' head ages, written with one ZADD
local new_heads = {}
for li = 1, lane_count do
  local host, prio, recs = lane_host[li], lane_prio[li], lane_recs[li]
  local key = prio == 0 and lane_prefix_0 .. host or lane_key(host, prio)
  local len, pushed
  if type(recs) == 'string' then
    len, pushed = redis.call('RPUSH', key, recs), 1
  else
    for first = 1, #recs, 4000 do
      len = redis.call('RPUSH', key, unpack(recs, first, math.min(first + 3999, #recs)))
    end
    pushed = #recs
  end
  if len == pushed then
    -- a new lane: listed in its host's priorities, its head's age in heads
    local was_empty = host_lane_added(host, prio)
    if host_was_empty[host] == nil then
      host_was_empty[host] = was_empty
    end
    new_heads[#new_heads + 1] = NOW_DIGITS
    new_heads[#new_heads + 1] = head_member(host, prio)
    local r = rank(prio, lane_seq[li])
    local best = host_rank[host]
    if not best or r < best then
      host_rank[host] = r
    end
  end
end
call_chunked('ZADD', K_HEADS, new_heads)
-- Hosts with a new lane go to `ready` at their best head's rank (never raising a rank they
-- have there) unless politeness holds them in `wait`: one read of `wait` and one ZADD for all.
local new_hosts, scheduled = 0, {}
for i = 1, host_count do
  local host = host_order[i]
  if host_rank[host] then
    scheduled[#scheduled + 1] = host
    if host_was_empty[host] then
      new_hosts = new_hosts + 1
    end
  end
end
local held = call_chunked('ZMSCORE', K_WAIT, scheduled)
local ranks = {}
for i, host in ipairs(scheduled) do
  if not held[i] then
    ranks[#ranks + 1] = int(host_rank[host])
    ranks[#ranks + 1] = host
  end
end
for first = 1, #ranks, 4000 do
  redis.call('ZADD', K_READY, 'LT', unpack(ranks, first, math.min(first + 3999, #ranks)))
end

local added = added_ready + added_delayed
own_format()
if added > 0 then
  redis.call('HSET', K_META, 'ids', int(next_id))
end
counter('seen', seen_added)
counter('ready', added_ready)
counter('hosts', new_hosts)
counter('seeded_total', added)
counter('duplicates_total', duplicates)
counter('over_budget_total', refused)
tally_flush(host_added, host_items_add)
tally_flush(host_delayed, add_delayed)
for _, host in ipairs(budget_hosts) do
  if budget_used[host] > 0 then
    redis.call('HINCRBY', K_HOSTUSED, host, budget_used[host])
  end
end
wake(added_ready)
return { table.concat(status), added_ready, added_delayed, first_id }
