-- crawlq script: lease
-- protocol: 6
-- flags: allow-oom
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 max items, 4 lease ttl ms, 5 default host delay ms,
--       6 max attempts, 7 reclaim limit (expired leases handled first), 8 promote limit,
--       9 default in-flight limit per host ('0' or absent: none; a host's own in `hostlimit`
--       comes first), 10 the workers' pacing ('<mode>:<factor>:<max ms>', mode 'lease' or
--       'answer': whether a host's next lease waits its delay after the lease or after the
--       answer; absent: 'lease'; a host's own mode in `hostpacing` comes first)
-- reply: {now, next_due, reclaimed, reclaimed_dead, lease_key1, record1, lease_key2, ...}
--        lease keys are '<token>:<id>'. next_due is the earliest time (ms) at which a delayed
--        item, a held-back host or an expiring lease can change what is leasable, or -1; it is
--        only computed when nothing was leased. Every lease expires at now + ttl. With the call
--        flag 'r' the reply ends with the shard's report (the prelude, reported_state).
-- Tokens are unique and increasing: above the last one handed out (meta.token) and at least
-- the server time in microseconds, so they never repeat even when Redis lost recent writes.

-- The call in three parts, each a function of its own: what is due (and the reply when
-- nothing is leasable), taking hosts from `ready` in rank order, and leasing one host's item.
-- The main chunk at the end runs them and writes what they collected.

-- The reply of a paused queue, or nil. A paused queue (pause.lua) leases nothing, not even
-- expired leases back: nothing scheduled until a timed pause ends.
local function paused_reply()
  local paused = META[2]
  if paused == '1' then
    return reported_state({ NOW, -1, 0, 0 }, -1)
  end
  local until_ms = paused and tonumber(paused) or 0
  if until_ms > NOW then
    return reported_state({ NOW, until_ms, 0, 0 }, until_ms)
  end
end

-- Every read that decides what to write comes first; then the types of the keys still unread
-- are checked; then the writes. With hosts ready (the usual call), the due members of each
-- time-ordered set are read at once: most calls find none, an empty reply. With none ready, the
-- earliest score of each set says whether any of it is due and, when none is, when that may
-- change; a queue with nothing in any of them (an idle worker polling an empty queue) answers
-- after one more read.

-- With no host ready: the reply when nothing is due, else the earliest scores of `leased`,
-- `delayed` and `wait` (nil: the set is empty).
local function earliest_or_reply()
  if redis.call('EXISTS', K_LEASED, K_DELAYED, K_WAIT) == 0 then
    return reported_state({ NOW, -1, 0, 0 }, -1)
  end
  local lease_due, item_due, host_due = earliest_score(K_LEASED), earliest_score(K_DELAYED), earliest_score(K_WAIT)
  if not due_at(lease_due) and not due_at(item_due) and not due_at(host_due) then
    -- nothing is leasable: say when that may change (a host paused until resumed, at
    -- 2^53 - 1 in `wait`, is never due and never named)
    local due = earliest_due(lease_due, item_due, host_due)
    return reported_state({ NOW, due, 0, 0 }, due)
  end
  return nil, lease_due, item_due, host_due
end

-- The members of a time-ordered set that are due, at most limit: read when some host is ready
-- (at: nil), or when the set's earliest score is due.
local function due_members(key, any_ready, at, limit)
  if not any_ready and not due_at(at) then
    return {}
  end
  return redis.call('ZRANGEBYSCORE', key, '-inf', NOW_DIGITS, 'LIMIT', '0', limit)
end

-- Hosts come out of `ready` in batches: one ZPOPMIN of as many hosts as leases are still
-- wanted, in rank order. A host without delay that still has ready items goes back with its
-- next head's rank: into `back` (one ZADD before the next ZPOPMIN and at the end), or, when
-- that rank is below the batch's last one, into `soon` (it may come before hosts of this
-- batch, and before anything still in `ready`), which is taken from in rank order with the
-- batch. So the leases are exactly those of popping the best host one at a time, with two
-- commands per batch instead of two per lease.
local batch, at, batch_last = nil, 1, 0
-- soon: ranks and hosts, sorted by descending rank (the next one is at the end); back: ZADD
-- arguments. Both made when first needed: a lease(1) allocates neither.
local soon_rank, soon_host, back
local soon_n = 0

-- The next host to lease from and its rank: from the batch or `soon`, whichever ranks first,
-- else from a new batch of at most `wanted` hosts; nil when `ready` is empty.
local function next_host(wanted)
  local from_batch = batch and batch[at]
  local batch_rank = from_batch and batch[at + 1] + 0
  if from_batch and (soon_n == 0 or batch_rank < soon_rank[soon_n]) then
    at = at + 2
    return from_batch, batch_rank
  end
  if soon_n > 0 then
    local host, host_rank = soon_host[soon_n], soon_rank[soon_n]
    soon_rank[soon_n], soon_host[soon_n] = nil, nil
    soon_n = soon_n - 1
    return host, host_rank
  end
  if back then
    call_chunked('ZADD', K_READY, back)
    back = nil
  end
  -- (a count of 1 is left out: the same pop, without a number to format)
  if wanted == 1 then
    batch = redis.call('ZPOPMIN', K_READY)
  else
    batch = redis.call('ZPOPMIN', K_READY, int(wanted))
  end
  if #batch == 0 then
    return nil
  end
  batch_last = batch[#batch] + 0
  at = 3
  return batch[1], #batch == 2 and batch_last or batch[2] + 0
end

-- A host goes back to `ready` with this rank (taken again by this call when it comes before
-- the batch's last host).
local function put_back(host, host_rank)
  if host_rank < batch_last then
    soon_rank, soon_host = soon_rank or {}, soon_host or {}
    local i = soon_n
    while i > 0 and soon_rank[i] < host_rank do
      soon_rank[i + 1], soon_host[i + 1] = soon_rank[i], soon_host[i]
      i = i - 1
    end
    soon_rank[i + 1], soon_host[i + 1] = host_rank, host
    soon_n = soon_n + 1
  else
    back = back or {}
    back[#back + 1] = int(host_rank)
    back[#back + 1] = host
  end
end

-- Hosts popped but not reached (the leases were all handed out) keep their ranks.
local function put_back_unreached()
  if (batch and batch[at]) or soon_n > 0 then
    back = back or {}
    while batch and batch[at] do
      back[#back + 1] = batch[at + 1]
      back[#back + 1] = batch[at]
      at = at + 2
    end
    for i = 1, soon_n do
      back[#back + 1] = int(soon_rank[i])
      back[#back + 1] = soon_host[i]
    end
  end
  if back then
    call_chunked('ZADD', K_READY, back)
  end
end

-- the lanes of priority 0 (most lanes) are this prefix and the host
local lane_prefix_0 = BASE .. ':l:0:'

-- The head record of the host's best lane, popped, with that lane's priority and key. The
-- host's score is the rank of its best lane's head, which names that lane's priority: no read
-- of the host's priorities. Only when that lane is empty (left by an interrupted writer) is the
-- best one looked up: O(log P) in the host's priorities either way. No priority: a lane or the
-- priority set holds a foreign value, and the host is held.
local function pop_head(host, host_rank)
  local top, lane
  if host_rank >= PRIORITY_0_FIRST and host_rank < PRIORITY_0_END then
    top, lane = '0', lane_prefix_0 .. host
  else
    top = rank_priority(host_rank)
    lane = lane_key(host, top)
  end
  local rec = redis.pcall('LPOP', lane)
  if not rec then
    top = best_priority(host)
    if top then
      lane = lane_key(host, top)
      rec = redis.pcall('LPOP', lane)
    end
  end
  if type(rec) == 'table' or top == false then
    hold_corrupt_host(host)
    return nil
  end
  return rec, top, lane
end

-- new head ages of the lanes popped from (false: the lane is empty now), in first-seen order
local head_of, head_lanes, head_n = {}, {}, 0

-- The rank of the host's next head after a pop from the lane of priority `top`: the same lane's
-- next record, else the next lane's head; nil: no ready item left; false: its priority set or
-- another lane holds a foreign value (the item popped is still leased, and the host held: it
-- keeps its other items, not counted as emptied).
local function next_head(host, top, lane)
  local member = top == '0' and host or top .. ':' .. host
  if head_of[member] == nil then
    head_n = head_n + 1
    head_lanes[head_n] = member
  end
  local following = redis.call('LINDEX', lane, '0')
  if following then
    local seq, ts = rec_seq_ts(following)
    head_of[member] = ts
    return (top == '0' and PRIORITY_0_FIRST or rank(top + 0, 0)) + seq
  end
  head_of[member] = false
  local unlisted = redis.pcall('ZREM', hp_key(host), top)
  if unlisted == 0 and top == '0' then
    -- no priority set: the priority-0 lane was the host's only one
    return nil
  end
  local ok, best = pcall(host_best, host, top == '0')
  if not ok or type(unlisted) == 'table' then
    return false
  end
  -- (no ready item left: host_best answers nil or false)
  return best or nil
end

-- The heads of the lanes popped from, written once at the end: new ages, or gone.
local function write_heads()
  local head_members, gone = {}, {}
  for _, member in ipairs(head_lanes) do
    local ts = head_of[member]
    if ts then
      head_members[#head_members + 1] = ts
      head_members[#head_members + 1] = member
    else
      gone[#gone + 1] = member
    end
  end
  call_chunked('ZADD', K_HEADS, head_members)
  call_chunked('ZREM', K_HEADS, gone)
end

-- The leases so far, and writes no later iteration reads, collected and sent as one
-- multi-member call each.
local count = 0
local lease_fields, leased_members, wait_members = {}, {}, {}
-- the digits of the lease tokens, which are consecutive (the prelude's number_digits)
local token_digits = {}
-- set by the main chunk before the first lease: the reply so far, and what each lease reads
local out, out_n
local default_delay, politeness, any_override, any_adaptive, flights, token_base, deadline

-- Lease `rec` of `host`, whose next head ranks `best` (see next_head). Returns the rank the
-- host goes back to `ready` with (no delay and more ready items), or nil: the host waits its
-- delay in `wait`, or an answer to free one of its in-flight slots, or is held.
local function lease_record(host, rec, best)
  local delay = default_delay
  if politeness then
    delay = host_delay(host, default_delay, any_override, any_adaptive)
  end
  -- (counted first: a host held for a foreign value still has this item in flight)
  local full = flights and FLIGHT.leased(host, NOW + delay)
  local goes_back
  if best == false then
    hold_corrupt_host(host)
  elseif full then
    -- held until an answer frees a slot (FLIGHT.leased), its politeness time kept
  elseif delay > 0 then
    -- kept even when the host is now empty, so an item seeded a moment later still waits
    wait_members[#wait_members + 1] = int(NOW + delay)
    wait_members[#wait_members + 1] = host
  elseif best then
    goes_back = best
  end
  count = count + 1
  local token_prefix, token_suffix = number_digits(token_digits, token_base + count)
  local lease_key = token_prefix .. token_suffix .. ':' .. rec_id(rec)
  lease_fields[count * 2 - 1], lease_fields[count * 2] = lease_key, rec
  leased_members[count * 2 - 1], leased_members[count * 2] = deadline, lease_key
  out[out_n + 1], out[out_n + 2] = lease_key, rec
  out_n = out_n + 2
  return goes_back
end

-- Read what is due and the politeness settings, check the types of the keys still unread, then
-- take expired leases back, put due delayed items in their lanes and make due hosts leasable
-- (the prelude's promote_due). Returns how many leases were reclaimed, and how many of them
-- went to dead letters.
local function promote(any_ready, lease_due, item_due, host_due)
  local reclaim_limit, promote_limit = ARGV[7], ARGV[8]
  local expired = due_members(K_LEASED, any_ready, lease_due, reclaim_limit)
  local due_items = due_members(K_DELAYED, any_ready, item_due, promote_limit)
  local due_hosts = due_members(K_WAIT, any_ready, host_due, promote_limit)
  any_override = redis.call('HLEN', K_HOSTDELAY) > 0
  any_adaptive = redis.call('HLEN', K_ADAPTIVE) > 0
  politeness = any_override or any_adaptive
  -- a host paused for a time comes due when its pause ends, which is then forgotten
  local any_paused = #due_hosts > 0 and redis.call('HLEN', K_HOSTPAUSE) > 0
  -- scheduled revisits that come due stop being counted as such
  local any_revisits = #due_items > 0 and redis.call('SCARD', K_REVISITS) > 0

  local types = { K_LEASES, 'hash', K_HEADS, 'zset' }
  if #expired > 0 or #due_items > 0 then
    for _, v in ipairs({ K_DEAD, 'zset', K_DEADREC, 'hash', K_HOSTDEAD, 'hash', K_HOSTDELAYED, 'hash' }) do
      types[#types + 1] = v
    end
  end
  expect_types(types)

  -- Expired leases are taken back, due delayed items join their lanes and due hosts become
  -- leasable (the prelude's promote_due)
  return promote_due(expired, due_items, due_hosts, tonumber(ARGV[6]),
    any_paused, any_revisits)
end

-- The call.
local reply = paused_reply()
if reply then
  return reply
end
local ready_hosts = redis.call('ZCARD', K_READY)
local any_ready = ready_hosts > 0
-- the earliest scores (nil: the set is empty), read only when no host is ready
local lease_due, item_due, host_due
if not any_ready then
  reply, lease_due, item_due, host_due = earliest_or_reply()
  if reply then
    return reply
  end
end

-- (read only now: a call that finds nothing leasable converts none of its numbers; the limits
-- go to Redis as the digits they came as)
local max_items, ttl = tonumber(ARGV[3]), tonumber(ARGV[4])
default_delay = tonumber(ARGV[5])
-- whether a lease may count in flight (a limit applies to some host): FLIGHT.leased
flights = FLIGHT.start(ARGV[9], ARGV[10])

local reclaimed, reclaimed_dead = promote(any_ready, lease_due, item_due, host_due)

token_base = math.max(tonumber(META[3] or '0'), NOW_US)
deadline = int(NOW + ttl)
out, out_n = { NOW, -1, reclaimed, reclaimed_dead }, 4
local emptied = 0

while count < max_items do
  local host, host_rank = next_host(max_items - count)
  if not host then
    break
  end
  local rec, top, lane = pop_head(host, host_rank)
  if top then
    local best = next_head(host, top, lane)
    local goes_back
    if rec then
      goes_back = lease_record(host, rec, best)
    elseif best then
      -- a priority listed without a lane (left by an interrupted writer): skip it
      goes_back = best
    elseif best == false then
      hold_corrupt_host(host)
    end
    if best == nil then
      emptied = emptied + 1
    end
    if goes_back then
      put_back(host, goes_back)
    end
  end
end
put_back_unreached()

if count > 0 then
  call_chunked('HSET', K_LEASES, lease_fields)
  call_chunked('ZADD', K_LEASED, leased_members)
  call_chunked('ZADD', K_WAIT, wait_members)
  redis.call('HSET', K_META, 'token', int(token_base + count))
  counter('ready', -count)
  counter('leased_total', count)
end
if head_n > 0 then
  write_heads()
  counter('hosts', -emptied)
end
if count == 0 then
  out[2] = next_due()
end
return reported_state(out)
