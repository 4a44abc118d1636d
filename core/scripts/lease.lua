-- crawlq script: lease
-- protocol: 7
-- flags: allow-oom
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 max items, 4 lease ttl ms, 5 default host delay ms,
--       6 max attempts, 7 reclaim limit (expired leases handled first), 8 promote limit,
--       9 default in-flight limit per host ('0' or absent: none; a host's own in `hostlimit`
--       comes first), 10 the workers' pacing ('<mode>:<factor>:<max ms>', mode 'lease' or
--       'answer': whether a host's next lease waits its delay after the lease or after the
--       answer; absent: 'lease'; a host's own mode in `hostpacing` comes first), 11 (optional)
--       the crawls to lease from, their names separated by spaces (absent or '': any crawl)
-- reply: {now, next_due, reclaimed, reclaimed_dead, lease_key1, record1, lease_key2, ...}
--        lease keys are '<token>:<id>'. next_due is the earliest time (ms) at which a delayed
--        item, a held-back host or an expiring lease can change what is leasable, or -1; it is
--        only computed when nothing was leased. Every lease expires at now + ttl. With the call
--        flag 'r' the reply ends with the shard's report (the prelude, reported_state).
-- Tokens are unique and increasing: above the last one handed out (meta.token) and at least
-- the server time in microseconds, so they never repeat even when Redis lost recent writes.

-- The lease's steps (scripts.rs, STEPS_END): each call runs the body at the end.
local LEASE = {}
-- the most hosts one call holds for blocked crawls (LEASE.limited_item)
LEASE.HOLDS_MAX = 1000
-- a filtered lease's filter (LEASE.filter), false for a lease from any crawl
LEASE.chosen = false

-- A paused queue (pause.lua) leases nothing, not even expired leases back: nothing scheduled
-- until a timed pause ends. Every read that decides what to write comes first; then the types
-- of the keys still unread are checked; then the writes. With hosts ready (the usual call),
-- the due members of each time-ordered set are read at once: most calls find none, an empty
-- reply. With none ready, the earliest score of each set says whether any of it is due and,
-- when none is, when that may change; a queue with nothing in any of them (an idle worker
-- polling an empty queue) answers after one more read.
-- Returns the reply when there is nothing to lease; else nil, the number of ready hosts and,
-- when that is 0, the earliest scores of the leased, delayed and waiting sets (nil: empty).
function LEASE.idle()
  local paused = META[2]
  if paused then
    if paused == '1' then
      return reported_state({ NOW, -1, 0, 0 }, -1)
    end
    local until_ms = tonumber(paused) or 0
    if until_ms > NOW then
      return reported_state({ NOW, until_ms, 0, 0 }, until_ms)
    end
  end
  local ready_hosts = redis.call('ZCARD', K_READY)
  if ready_hosts > 0 then
    return nil, ready_hosts
  end
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
  return nil, 0, lease_due, item_due, host_due
end

-- the members of a time-ordered set that are due, at most limit: read when some host is ready,
-- or when its earliest score is due
function LEASE.due_members(key, ready_hosts, at, limit)
  if ready_hosts == 0 and not due_at(at) then
    return {}
  end
  return redis.call('ZRANGEBYSCORE', key, '-inf', NOW_DIGITS, 'LIMIT', '0', limit)
end

-- Expired leases are taken back, due delayed items join their lanes and due hosts become
-- leasable (the prelude's promote_due). Returns the reclaimed and dead-lettered counts and
-- whether any host has a delay of its own or an adaptive one.
function LEASE.promote(argv, ready_hosts, lease_due, item_due, host_due)
  -- (the limits go to Redis as the digits they came as)
  local reclaim_limit, promote_limit = argv[7], argv[8]
  local expired = LEASE.due_members(K_LEASED, ready_hosts, lease_due, reclaim_limit)
  local due_items = LEASE.due_members(K_DELAYED, ready_hosts, item_due, promote_limit)
  local due_hosts = LEASE.due_members(K_WAIT, ready_hosts, host_due, promote_limit)
  local any_override = redis.call('HLEN', K_HOSTDELAY) > 0
  local any_adaptive = redis.call('HLEN', K_ADAPTIVE) > 0
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
  if #expired > 0 then
    -- an expired lease frees its host's in-flight slot (reclaim_leases, FLIGHT.any), after the
    -- due items were written
    for _, v in ipairs({ FLIGHT.counts, 'hash', FLIGHT.full, 'hash', K_HOSTPAUSE, 'hash', FLIGHT.answers, 'hash',
      K_WAKE, 'list' }) do
      types[#types + 1] = v
    end
  end
  expect_types(types)
  local reclaimed, reclaimed_dead = promote_due(expired, due_items, due_hosts, tonumber(argv[6]),
    any_paused, any_revisits)
  return reclaimed, reclaimed_dead, any_override, any_adaptive
end

-- The host's next ready item: the head of the lane its rank names (the host's score is the
-- rank of its best lane's head, which names that lane's priority: no read of the host's
-- priorities). Only when that lane is empty (left by an interrupted writer) is the best one
-- looked up: O(log P) in the host's priorities either way. Then the rank of the host's next
-- head: the same lane's next record, else the next lane's head. The lane's new head age goes
-- into head_of (false: the lane is empty now), and the lane into head_lanes the first time.
-- (One step for both: a step called for every leased item costs measurably, bench/README.md.)
-- Returns the lane's priority (nil: the host is held for a foreign value), the record (nil:
-- the lane was empty) and the next head's rank: nil when the host has no ready item left,
-- false when its priority set or another lane holds a foreign value (this item is leased and
-- the host held: it keeps its other items).
function LEASE.lane_item(host, host_rank, head_of, head_lanes)
  local top, lane
  if host_rank >= PRIORITY_0_FIRST and host_rank < PRIORITY_0_END then
    -- (the lanes of priority 0, most lanes, are the base's prefix and the host)
    top, lane = '0', BASE .. ':l:0:' .. host
  else
    top = rank_priority(host_rank)
    lane = lane_key(host, top)
  end
  local rec = redis.pcall('LPOP', lane)
  if not rec then
    -- (a host without a priority set has only its priority-0 lane)
    top = redis.pcall('ZRANGE', hp_key(host), '0', '0')
    top = top[1] or (not top.err and '0')
    if top then
      lane = lane_key(host, top)
      rec = redis.pcall('LPOP', lane)
    end
  end
  if type(rec) == 'table' or top == false then
    -- a lane or the priority set holds a foreign value: the host is held, the rest goes on
    hold_corrupt_host(host)
    return nil
  end
  local member = top == '0' and host or top .. ':' .. host
  if head_of[member] == nil then
    head_lanes[#head_lanes + 1] = member
  end
  local following = redis.call('LINDEX', lane, '0')
  if following then
    local seq, ts = rec_seq_ts(following)
    head_of[member] = ts
    return top, rec, (top == '0' and PRIORITY_0_FIRST or rank(top + 0, 0)) + seq
  end
  head_of[member] = false
  local unlisted = redis.pcall('ZREM', hp_key(host), top)
  if unlisted == 0 and top == '0' then
    -- no priority set: the priority-0 lane was the host's only one
    return top, rec, nil
  end
  local ok, best = pcall(host_best, host, top == '0')
  if not ok or type(unlisted) == 'table' then
    return top, rec, false
  end
  -- (no ready item left: host_best answers nil or false)
  return top, rec, best or nil
end

-- The host's next item when it may have crawl lanes (CRAWL.on): the head of its best crawl
-- lane when that ranks at or before the host's rank (which is its best head's), else its
-- lanes' next (LEASE.lane_item); either way the host's next rank is the best of both. Answers
-- as LEASE.lane_item; a crawl lane's member in `heads` is CRAWL.head(crawl, host). With crawls
-- paused or capped in the shard, LEASE.limited_item instead.
function LEASE.crawl_item(host, host_rank, head_of, head_lanes)
  if CRAWL.limited() then
    return LEASE.limited_item(host, head_of, head_lanes)
  end
  local listed = redis.pcall('ZRANGE', CRAWL.lanes(host), '0', '1', 'WITHSCORES')
  if listed.err then
    hold_corrupt_host(host)
    return nil
  end
  local head_rank = listed[2] and listed[2] + 0
  if not head_rank or head_rank > host_rank then
    local top, rec, best = LEASE.lane_item(host, host_rank, head_of, head_lanes)
    if top and best ~= false then
      best = CRAWL.better(best, head_rank)
    end
    return top, rec, best
  end
  return LEASE.crawl_pop(host, listed[1], listed[4] and listed[4] + 0, nil, head_of, head_lanes)
end

-- LEASE.crawl_item when some crawl is paused or capped (CRAWL.limited): the best lane of a
-- crawl that is not blocked (nor held back by its rate), among the host's first 64 crawl lanes,
-- or its default crawl's lanes when they rank first. A host with neither waits in `wait` until
-- the earliest of its rate-held crawls may lease again, or (none) is held for the blocked
-- crawls it has lanes of (CRAWL.hold); no lease, nil. The host's next rank counts every lane, blocked or not, so a
-- host keeps its place while a crawl's cap holds it back.
function LEASE.limited_item(host, head_of, head_lanes)
  local listed = redis.pcall('ZRANGE', CRAWL.lanes(host), '0', '63', 'WITHSCORES')
  if listed.err then
    hold_corrupt_host(host)
    return nil
  end
  local pick, blocked, until_ms = nil, {}, nil
  for i = 1, #listed, 2 do
    local crawl = string.match(listed[i], '^%-?%d+:(.*)$')
    local rate_wait = CRAWL.rate_wait(crawl)
    if CRAWL.blocked(crawl) then
      blocked[#blocked + 1] = crawl
    elseif rate_wait then
      until_ms = math.min(until_ms or rate_wait, rate_wait)
    else
      pick = i
      break
    end
  end
  local lanes = false
  if redis.call('EXISTS', hp_key(host), lane_key(host, 0)) > 0 then
    local ok, best = pcall(lanes_best, host)
    if not ok then
      hold_corrupt_host(host)
      return nil
    end
    lanes = best or false
  end
  local pick_rank = pick and listed[pick + 1] + 0
  if lanes and (not pick_rank or lanes < pick_rank) then
    local top, rec, best = LEASE.lane_item(host, lanes, head_of, head_lanes)
    if top and best ~= false then
      best = CRAWL.better(best, listed[2] and listed[2] + 0)
    end
    return top, rec, best
  end
  if not pick and until_ms then
    -- a crawl held back by its rate: the host waits until that crawl may lease again (it is
    -- looked at again then, as any host whose delay ends)
    redis.call('ZADD', K_WAIT, int(math.ceil(until_ms)), host)
    return nil
  elseif not pick then
    CRAWL.hold(host, blocked)
    return nil
  end
  return LEASE.pop_listed(host, listed, pick, lanes, head_of, head_lanes)
end

-- LEASE.crawl_pop of the lane at `pick` of a host's crawl lanes as ZRANGE WITHSCORES listed
-- them, the best of the others being the first listed or (this one being the first) the second.
function LEASE.pop_listed(host, listed, pick, lanes, head_of, head_lanes)
  local other = listed[2]
  if pick == 1 then
    other = listed[4]
  end
  return LEASE.crawl_pop(host, listed[pick], other and other + 0, lanes, head_of, head_lanes)
end

-- Lease the head of a host's crawl lane `member`. others: the best rank of the host's other
-- crawl lanes (nil: none); lanes: the rank of its default crawl's best head (false: none; nil:
-- not read yet). Answers as LEASE.lane_item.
function LEASE.crawl_pop(host, member, others, lanes, head_of, head_lanes)
  local lane = CRAWL.lane(member, host)
  local rec = redis.pcall('LPOP', lane)
  if type(rec) == 'table' then
    hold_corrupt_host(host)
    return nil
  end
  local heads_member = CRAWL.head(member, host)
  if head_of[heads_member] == nil then
    head_lanes[#head_lanes + 1] = heads_member
  end
  -- the host's next rank: its next crawl lane's head, this lane's next, or a lane's head
  local best = others
  local following = rec and redis.call('LINDEX', lane, '0')
  local prio = string.match(member, '^(%-?%d+):')
  if following then
    local tag, ts = CRAWL.tag_ts(following)
    local r = rank(priority_number(prio), tag)
    head_of[heads_member], best = ts, CRAWL.better(best, r)
    CRAWL.lane_listed(member, host, redis.call('ZADD', CRAWL.lanes(host), int(r), member))
  else
    -- the crawl has nothing queued on the host at this priority: its next item there starts
    -- from the host's virtual time (CRAWL.tag)
    head_of[heads_member] = false
    CRAWL.lane_unlisted(member, host, redis.call('ZREM', CRAWL.lanes(host), member))
    redis.pcall('HDEL', CRAWL.tags(host), string.sub(member, #prio + 2))
  end
  if lanes == nil then
    -- (most hosts of a crawl have no lane of the default crawl: one read says so)
    if redis.call('EXISTS', hp_key(host), lane_key(host, 0)) > 0 then
      local ok
      ok, lanes = pcall(lanes_best, host)
      if not ok then
        best = false
      end
    end
  end
  if best ~= false then
    best = CRAWL.better(best, lanes)
  end
  if not rec then
    -- a crawl lane listed without records (left by an interrupted writer): passed over
    return '*', nil, best
  end
  -- the host's virtual time is the tag it serves (CRAWL.tag); a foreign value at its key only
  -- loses that (pcall: the lease goes on)
  redis.pcall('HSET', CRAWL.tags(host), '*', int((CRAWL.tag_ts(rec))))
  local crawl = string.sub(member, #prio + 2)
  CRAWL.count(crawl, 'ready', -1)
  CRAWL.count(crawl, 'leased', 1)
  return '*', rec, best
end

-- Workers that lease from chosen crawls (ARGV[11]): the call's filter, {crawls = names, set =
-- name -> true, seen = hosts looked at, looked = how many, later = ready hosts found and not
-- pulled yet, checks = hosts checked for lanes, wrapped = whether every crawl's scan went
-- round, lapped = crawl -> true once a scan of it started from the beginning in this call}.
function LEASE.filter(names)
  local f = { crawls = {}, set = {}, seen = {}, looked = 0, later = {}, checks = 0, wrapped = true,
    lapped = {} }
  for name in string.gmatch(names, '%S+') do
    if not f.set[name] then
      f.set[name] = true
      f.crawls[#f.crawls + 1] = name
    end
  end
  return f
end

-- The most hosts of each chosen crawl a filtered lease looks at in a call, the fewest it asks a
-- scan for, and the most hosts it checks for stale listing (EXISTS) in a call.
LEASE.LOOK_MAX, LEASE.SCAN_MIN, LEASE.CHECKS_MAX = 400, 16, 8

-- The next hosts for a filtered lease, as ZPOPMIN answers them ({host, rank, ...}, taken out of
-- `ready`), at most `wanted`: the ready hosts among each chosen crawl's next hosts
-- (`cq:<crawl>`, SSCAN of max(wanted, 16) a round, their ready ranks read with one ZMSCORE),
-- scanned from where the last call stopped (`cqcur`), so every host of the crawl is looked at
-- in turn; rounds go on until `wanted` are found or 400 hosts a crawl were looked at. A host
-- found neither ready nor with any crawl lanes left is dropped from the set (at most 8 checked
-- a call). The ready hosts found past `wanted` are kept, in rank order, for the next pull (a
-- candidate may turn out to have no lane of a chosen crawl left: the next one is then taken
-- instead of nothing).
function LEASE.candidates(filter, wanted)
  local found = filter.later
  if #found > 0 then
    return LEASE.pull_candidates(filter, found, wanted)
  end
  local count = int(math.max(wanted, LEASE.SCAN_MIN))
  local limit, rounds = LEASE.LOOK_MAX * #filter.crawls, 0
  while #found < wanted and filter.looked < limit and rounds < LEASE.LOOK_MAX / LEASE.SCAN_MIN do
    local fresh_n, went_round = 0, true
    rounds = rounds + 1
    for _, crawl in ipairs(filter.crawls) do
      local set = BASE .. ':cq:' .. crawl
      local cursor = redis.call('HGET', BASE .. ':cqcur', crawl) or '0'
      local scan = redis.pcall('SSCAN', set, cursor, 'COUNT', count)
      if not scan.err then
        redis.call('HSET', BASE .. ':cqcur', crawl, scan[1])
        if scan[1] ~= '0' then
          filter.wrapped = false
        end
        -- (a scan may end its lap with no host in its last answer: only one that went from
        -- the start to the end in this call has looked at every host)
        if cursor == '0' then
          filter.lapped[crawl] = true
        end
        went_round = went_round and scan[1] == '0' and filter.lapped[crawl] == true
        local fresh = {}
        for _, host in ipairs(scan[2]) do
          if not filter.seen[host] then
            filter.seen[host] = true
            fresh[#fresh + 1] = host
          end
        end
        if #fresh > 0 then
          local ranks = redis.call('ZMSCORE', K_READY, unpack(fresh))
          for i, host in ipairs(fresh) do
            if ranks[i] then
              found[#found + 1] = { ranks[i] + 0, host }
            elseif filter.checks < LEASE.CHECKS_MAX then
              filter.checks = filter.checks + 1
              if redis.call('EXISTS', CRAWL.lanes(host)) == 0 then
                redis.call('SREM', set, host)
              end
            end
          end
          fresh_n = fresh_n + #fresh
        end
      end
    end
    filter.looked = filter.looked + fresh_n
    if fresh_n == 0 and went_round then
      -- (every host of the crawls was looked at: a small set answers all of it at once)
      break
    end
  end
  table.sort(found, function(a, b) return a[1] < b[1] end)
  return LEASE.pull_candidates(filter, found, wanted)
end

-- The first `wanted` of `found` ({rank, host} in rank order) taken out of `ready`, as ZPOPMIN
-- answers them; the rest kept for the next pull.
function LEASE.pull_candidates(filter, found, wanted)
  local batch, n = {}, math.min(#found, wanted)
  for i = 1, n do
    redis.call('ZREM', K_READY, found[i][2])
    batch[#batch + 1] = found[i][2]
    batch[#batch + 1] = found[i][1]
  end
  filter.later = { unpack(found, n + 1) }
  return batch
end

-- LEASE.crawl_item for a filtered lease: the best lane on the host of a chosen crawl that may
-- lease (not blocked, not held back by its rate). A host with none goes back to `ready` as it
-- was (nil: nothing leased, nothing held); a chosen crawl without a lane on it loses the host
-- from its set.
function LEASE.filtered_item(host, host_rank, filter, head_of, head_lanes)
  local listed = redis.pcall('ZRANGE', CRAWL.lanes(host), '0', '63', 'WITHSCORES')
  if listed.err then
    hold_corrupt_host(host)
    return nil
  end
  local pick, has = nil, {}
  local limited = CRAWL.limited()
  for i = 1, #listed, 2 do
    local crawl = string.match(listed[i], '^%-?%d+:(.*)$')
    if filter.set[crawl] then
      has[crawl] = true
      if not pick and not (limited and (CRAWL.blocked(crawl) or CRAWL.rate_wait(crawl))) then
        pick = i
      end
    end
  end
  if #listed < 128 then
    for _, crawl in ipairs(filter.crawls) do
      if not has[crawl] then
        redis.call('SREM', BASE .. ':cq:' .. crawl, host)
      end
    end
  end
  if not pick then
    redis.call('ZADD', K_READY, int(host_rank), host)
    return nil
  end
  return LEASE.pop_listed(host, listed, pick, nil, head_of, head_lanes)
end

function LEASE.next_item(host, host_rank, head_of, head_lanes)
  if LEASE.chosen then
    return LEASE.filtered_item(host, host_rank, LEASE.chosen, head_of, head_lanes)
  end
  if CRAWL.on() then
    return LEASE.crawl_item(host, host_rank, head_of, head_lanes)
  end
  return LEASE.lane_item(host, host_rank, head_of, head_lanes)
end

-- A host that goes back to `ready` with `rank` (delay 0 and more ready items) below the
-- batch's last rank: it may come before hosts of this batch, and before anything still in
-- `ready`, so it goes into `soon`, taken again by the loop in rank order (a rank above goes
-- into `back`: ZADD arguments, sent before the next ZPOPMIN and at the end). soon_rank and
-- soon_host hold ranks and hosts sorted by descending rank (the next one at the end), soon_n of
-- them; each is made when first needed (a lease(1) allocates none). Returns all three.
function LEASE.soon(host, rank, soon_rank, soon_host, soon_n)
  soon_rank, soon_host = soon_rank or {}, soon_host or {}
  local i = soon_n
  while i > 0 and soon_rank[i] < rank do
    soon_rank[i + 1], soon_host[i + 1] = soon_rank[i], soon_host[i]
    i = i - 1
  end
  soon_rank[i + 1], soon_host[i + 1] = rank, host
  return soon_rank, soon_host, soon_n + 1
end

-- After the loop, hosts popped but not reached (the leases were all handed out) keep their
-- ranks: with those put back, the batch from `at` on and `soon` go back to `ready`.
function LEASE.keep_unreached(batch, at, soon_rank, soon_host, soon_n, back)
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

-- Then the leases, the hosts' politeness times and the lanes' new head ages are written, each
-- as one multi-member call.
function LEASE.write(count, token_base, lease_fields, leased_members, wait_members, head_of,
                     head_lanes, emptied)
  if count > 0 then
    call_chunked('HSET', K_LEASES, lease_fields)
    call_chunked('ZADD', K_LEASED, leased_members)
    call_chunked('ZADD', K_WAIT, wait_members)
    redis.call('HSET', K_META, 'token', int(token_base + count))
    counter('ready', -count)
    counter('leased_total', count)
  end
  if #head_lanes > 0 then
    local head_members, gone = {}, {}
    for _, member in ipairs(head_lanes) do
      local ts = head_of[member]
      if string.byte(member, 1) == 42 then
        -- ('*': a crawl lane's)
        CRAWL.head_age_of(member, ts or nil)
      end
      if ts then
        head_members[#head_members + 1] = ts
        head_members[#head_members + 1] = member
      else
        gone[#gone + 1] = member
      end
    end
    call_chunked('ZADD', K_HEADS, head_members)
    call_chunked('ZREM', K_HEADS, gone)
    counter('hosts', -emptied)
  end
end

-- Hosts come out of `ready` in batches: one ZPOPMIN of as many hosts as leases are still
-- wanted, in rank order. A host without delay that still has ready items goes back with its
-- next head's rank (into `soon`, LEASE.soon, or `back`), so the leases are exactly those of
-- popping the best host one at a time, with two commands per batch instead of two per lease.
-- Writes no later iteration reads are collected and sent at the end (LEASE.keep_unreached,
-- LEASE.write). Returns how many were leased; each lease key and record are added to `out`.
function LEASE.take(max_items, ttl, default_delay, flights, politeness, any_override, any_adaptive, out)
  local token_base = math.max(tonumber(META[3] or '0'), NOW_US)
  local deadline = int(NOW + ttl)
  local count, emptied, out_n = 0, 0, #out
  local lease_fields, leased_members, wait_members = {}, {}, {}
  -- new head ages of the lanes popped from (false: the lane is empty now), in first-seen order
  local head_of, head_lanes = {}, {}
  -- the digits of the lease tokens, which are consecutive (the prelude's number_digits)
  local token_digits = {}
  local batch, at, batch_last = nil, 1, 0
  local soon_rank, soon_host, back
  local soon_n = 0
  -- (hosts held for blocked crawls: at most HOLDS_MAX a call, the rest left to the next)
  while count < max_items and (CRAWL.holds or 0) < LEASE.HOLDS_MAX do
    -- the next host to lease from, and its rank: from the batch or `soon`, whichever ranks
    -- first, else from a new batch
    local host, host_rank
    local from_batch = batch and batch[at]
    local batch_rank = from_batch and batch[at + 1] + 0
    if from_batch and (soon_n == 0 or batch_rank < soon_rank[soon_n]) then
      host, host_rank = from_batch, batch_rank
      at = at + 2
    elseif soon_n > 0 then
      host, host_rank = soon_host[soon_n], soon_rank[soon_n]
      soon_rank[soon_n], soon_host[soon_n] = nil, nil
      soon_n = soon_n - 1
    else
      if back then
        call_chunked('ZADD', K_READY, back)
        back = nil
      end
      -- (a count of 1 is left out: the same pop, without a number to format)
      local wanted = max_items - count
      if LEASE.chosen then
        batch = LEASE.candidates(LEASE.chosen, wanted)
      else
        batch = wanted == 1 and redis.call('ZPOPMIN', K_READY) or redis.call('ZPOPMIN', K_READY, int(wanted))
      end
      if #batch == 0 then
        break
      end
      batch_last = batch[#batch] + 0
      host, host_rank, at = batch[1], #batch == 2 and batch_last or batch[2] + 0, 3
    end
    local top, rec, best = LEASE.next_item(host, host_rank, head_of, head_lanes)
    -- the rank the host goes back to `ready` with (delay 0 and more ready items), or nil
    local goes_back
    if top then
      if rec then
        local delay = politeness and host_delay(host, default_delay, any_override, any_adaptive) or default_delay
        -- (counted first: a host held for a foreign value still has this item in flight)
        local full = flights and FLIGHT.leased(host, NOW + delay)
        if best == false then
          hold_corrupt_host(host)
        elseif full then
          -- held until an answer frees a slot (FLIGHT.leased), its politeness time kept
        elseif delay > 0 then
          -- kept even when the host is now empty, so an item seeded a moment later still waits
          wait_members[#wait_members + 1] = int(NOW + delay)
          wait_members[#wait_members + 1] = host
        else
          goes_back = best
        end
        count = count + 1
        local token_prefix, token_suffix = number_digits(token_digits, token_base + count)
        local lease_key = token_prefix .. token_suffix .. ':' .. rec_id(rec)
        lease_fields[count * 2 - 1], lease_fields[count * 2] = lease_key, rec
        leased_members[count * 2 - 1], leased_members[count * 2] = deadline, lease_key
        out[out_n + 1], out[out_n + 2] = lease_key, rec
        out_n = out_n + 2
      elseif best == false then
        hold_corrupt_host(host)
      else
        -- a priority listed without a lane (left by an interrupted writer): skip it
        goes_back = best
      end
      if best == nil then
        emptied = emptied + 1
      end
    end
    if goes_back and goes_back < batch_last then
      soon_rank, soon_host, soon_n = LEASE.soon(host, goes_back, soon_rank, soon_host, soon_n)
    elseif goes_back then
      -- (most hosts: written inline, as a step for every leased item costs, bench/README.md)
      back = back or {}
      back[#back + 1], back[#back + 2] = int(goes_back), host
    end
  end
  LEASE.keep_unreached(batch, at, soon_rank, soon_host, soon_n, back)
  LEASE.write(count, token_base, lease_fields, leased_members, wait_members, head_of, head_lanes,
    emptied)
  return count
end

--- per call ---
-- (the lease steps run in composite scripts too, which pass a filter only for a worker of
-- chosen crawls; false, not nil: begin())
LEASE.chosen = false
local reply, ready_hosts, lease_due, item_due, host_due = LEASE.idle()
if reply then
  return reply
end
UNPACK.host_zsets()
-- (read only now: a call that finds nothing leasable converts none of its numbers)
local max_items, ttl, default_delay = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
-- whether a lease may count in flight (a limit applies to some host): FLIGHT.leased
local flights = FLIGHT.start(ARGV[9], ARGV[10])
if ARGV[11] and ARGV[11] ~= '' then
  LEASE.chosen = LEASE.filter(ARGV[11])
end
local reclaimed, reclaimed_dead, any_override, any_adaptive = LEASE.promote(ARGV, ready_hosts,
  lease_due, item_due, host_due)
local out = { NOW, -1, reclaimed, reclaimed_dead }
if LEASE.take(max_items, ttl, default_delay, flights, any_override or any_adaptive, any_override,
    any_adaptive, out) == 0 then
  -- (a call that stopped at its bound of holds says to look again now)
  -- (and so does a filtered call whose scan of its crawls' hosts has not gone round)
  local more = (CRAWL.holds or 0) >= LEASE.HOLDS_MAX or (LEASE.chosen and not LEASE.chosen.wrapped)
  out[2] = more and NOW or next_due()
end
return reported_state(out)
