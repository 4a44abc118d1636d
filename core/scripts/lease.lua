-- crawlq script: lease
-- protocol: 1
-- flags: allow-oom
-- KEYS: the 12 queue keys (see common.lua)
-- ARGV: 1 base, 2 clock, 3 max items, 4 lease ttl ms, 5 default host delay ms,
--       6 max attempts, 7 reclaim limit (expired leases handled first), 8 promote limit
-- reply: {now, next_due, reclaimed, reclaimed_dead, token1, record1, token2, record2, ...}
--        (the meta field 'token' is the last token handed out, so it also counts leases)
--        next_due is the earliest time (ms) at which a delayed item, a held-back host or an
--        expiring lease can change what is leasable, or -1; it is only computed when nothing
--        was leased. Every lease expires at now + ttl.

local max_items, ttl, default_delay = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local max_attempts, reclaim_limit, promote_limit = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])

local reclaimed, reclaimed_dead = reclaim_expired(reclaim_limit, max_attempts)

-- Delayed items (seeded with a delay, or retried with backoff) that are due join their lanes.
local due_items = redis.call('ZRANGEBYSCORE', K_DELAYED, '-inf', NOW_DIGITS, 'LIMIT', 0, promote_limit)
for _, rec in ipairs(due_items) do
  enqueue_ready(rec, false)
end
if #due_items > 0 then
  redis.call('ZREM', K_DELAYED, unpack(due_items))
end

-- Hosts whose politeness delay has passed become leasable again.
local due_hosts = redis.call('ZRANGEBYSCORE', K_WAIT, '-inf', NOW_DIGITS, 'LIMIT', 0, promote_limit)
for _, host in ipairs(due_hosts) do
  local best = host_heads(host)
  if best then
    redis.call('ZADD', K_READY, int(best), host)
  end
end
if #due_hosts > 0 then
  redis.call('ZREM', K_WAIT, unpack(due_hosts))
end

local any_override = redis.call('EXISTS', K_HOSTDELAY) == 1
local any_adaptive = redis.call('EXISTS', K_ADAPTIVE) == 1
local token_base = tonumber(redis.call('HGET', K_META, 'token') or '0')
local deadline = int(NOW + ttl)
local out = { NOW, -1, reclaimed, reclaimed_dead }
local count, emptied = 0, 0
-- Writes no later iteration reads are collected and sent as one multi-member call each.
local lease_fields, leased_members, wait_members = {}, {}, {}
local head_of, head_hosts = {}, {}

while count < max_items do
  local popped = redis.call('ZPOPMIN', K_READY)
  if #popped == 0 then
    break
  end
  local host = popped[1]
  local hp = hp_key(host)
  local prios = redis.call('ZRANGE', hp, 0, -1)
  if #prios > 0 then
    local top = prios[1]
    local lane = lane_key(host, top)
    local rec = redis.call('LPOP', lane)
    -- the host's next head: the same lane's next record, else the next lane's head
    local best, oldest
    local following = redis.call('LINDEX', lane, 0)
    if following then
      local seq, ts = rec_seq_ts(following)
      best, oldest = rank(tonumber(top), seq), ts
    else
      redis.call('ZREM', hp, top)
    end
    for i = 2, #prios do
      local seq, ts = rec_seq_ts(redis.call('LINDEX', lane_key(host, prios[i]), 0))
      if not best then
        best = rank(tonumber(prios[i]), seq)
      end
      oldest = earlier(oldest, ts)
    end

    local delay = host_delay(host, default_delay, any_override, any_adaptive)
    if delay > 0 then
      -- kept even when the host is now empty, so an item seeded a moment later still waits
      wait_members[#wait_members + 1] = int(NOW + delay)
      wait_members[#wait_members + 1] = host
    elseif best then
      -- right away: the host may be popped again by this loop
      redis.call('ZADD', K_READY, int(best), host)
    end
    if head_of[host] == nil then
      head_hosts[#head_hosts + 1] = host
    end
    head_of[host] = oldest or false
    if not best then
      emptied = emptied + 1
    end

    count = count + 1
    local token = int(token_base + count)
    lease_fields[#lease_fields + 1] = token
    lease_fields[#lease_fields + 1] = rec
    leased_members[#leased_members + 1] = deadline
    leased_members[#leased_members + 1] = token
    out[#out + 1] = token
    out[#out + 1] = rec
  end
end

if count > 0 then
  call_chunked('HSET', K_LEASES, lease_fields)
  call_chunked('ZADD', K_LEASED, leased_members)
  call_chunked('ZADD', K_WAIT, wait_members)
  local head_members, gone = {}, {}
  for _, host in ipairs(head_hosts) do
    local oldest = head_of[host]
    if oldest then
      head_members[#head_members + 1] = oldest
      head_members[#head_members + 1] = host
    else
      gone[#gone + 1] = host
    end
  end
  call_chunked('ZADD', K_HEADS, head_members)
  call_chunked('ZREM', K_HEADS, gone)
  redis.call('HSET', K_META, 'token', int(token_base + count))
  counter('ready', -count)
  counter('hosts', -emptied)
else
  local next_due
  for _, key in ipairs({ K_WAIT, K_DELAYED, K_LEASED }) do
    local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    if first[2] then
      local at = tonumber(first[2])
      if not next_due or at < next_due then
        next_due = at
      end
    end
  end
  if next_due then
    out[2] = next_due
  end
end
return out
