-- The member of a lane in `heads`: the host for priority 0 (most lanes), else
-- '<priority>:<host>'. Every non-empty lane has one, scored by its head's enqueue time.
local function head_member(host, prio)
  if prio == 0 or prio == '0' then
    return host
  end
  return priority_digits(prio) .. ':' .. host
end

-- The rank of the head of a host's best lane (its highest priority) of the default crawl, or
-- nil when it has none with items. O(log P) in the host's priorities: only the top lane is
-- read. A priority listed without a lane (defensive: no script leaves one) is dropped on the
-- way; a set left with priority 0 alone goes (the lane itself says it is there). lane0_empty:
-- the caller has just seen the host's priority-0 lane empty (no read of it when the set is
-- absent).
local function lanes_best(host, lane0_empty)
  local hp = hp_key(host)
  while true do
    local top = redis.call('ZRANGE', hp, '0', '1')
    local prio = top[1]
    if not prio then
      if lane0_empty then
        return nil
      end
      local head = redis.call('LINDEX', lane_key(host, 0), '0')
      return head and rank(0, (rec_seq_ts(head)))
    end
    local head = redis.call('LINDEX', lane_key(host, prio), '0')
    if head then
      if prio == '0' and not top[2] then
        own_format('3')
        redis.call('ZREM', hp, '0')
      end
      return rank(priority_number(prio), (rec_seq_ts(head)))
    end
    redis.call('ZREM', hp, prio)
  end
end

-- The better of two ranks, either of which may be nil or false (none); nil when both are.
function CRAWL.better(a, b)
  if a and (not b or a < b) then
    return a
  end
  return b or nil
end

-- The rank of a host's next ready item, or nil when it has none: the best of its lanes' heads
-- and, in a queue with crawls, of its crawl lanes' heads.
local function host_best(host, lane0_empty)
  local best = lanes_best(host, lane0_empty)
  if CRAWL.on() then
    local head = redis.call('ZRANGE', CRAWL.lanes(host), '0', '0', 'WITHSCORES')
    return CRAWL.better(best, head[2] and head[2] + 0)
  end
  return best
end

-- List a crawl lane's head (its record; nil: the lane is empty) in the host's crawl lanes at
-- its rank, with its age in `heads`. `member` is the lane's (CRAWL.member).
function CRAWL.relist(member, host, prio, head)
  if head then
    local tag, ts = CRAWL.tag_ts(head)
    CRAWL.lane_listed(member, host, redis.call('ZADD', CRAWL.lanes(host), int(rank(prio, tag)), member))
    redis.call('ZADD', K_HEADS, ts, CRAWL.head(member, host))
    CRAWL.head_age(member, host, ts)
  else
    CRAWL.lane_unlisted(member, host, redis.call('ZREM', CRAWL.lanes(host), member))
    redis.call('ZREM', K_HEADS, CRAWL.head(member, host))
    CRAWL.head_age(member, host, nil)
  end
end

-- Empty a host's crawl lanes (only those of `only`, a crawl name, unless nil), at most `budget`
-- records, each passed to `each` (the caller forgets its live member); the lanes are relisted
-- or unlisted and the crawls' ready counts kept. Returns how many records were removed.
function CRAWL.empty_lanes(host, budget, only, each)
  local removed_n = 0
  for _, member in ipairs(redis.call('ZRANGE', CRAWL.lanes(host), '0', '-1')) do
    if budget <= removed_n then
      break
    end
    local prio = string.match(member, '^(%-?%d+):')
    local crawl = string.sub(member, #prio + 2)
    if not only or crawl == only then
      local lane = CRAWL.lane(member, host)
      local recs = redis.call('LRANGE', lane, '0', int(budget - removed_n - 1))
      for _, rec in ipairs(recs) do
        each(rec)
      end
      redis.call('LTRIM', lane, int(#recs), '-1')
      removed_n = removed_n + #recs
      CRAWL.count(crawl, 'ready', -#recs)
      local head = redis.call('LINDEX', lane, '0')
      CRAWL.relist(member, host, priority_number(prio), head)
      if not head then
        redis.call('HDEL', CRAWL.tags(host), crawl)
      end
    end
  end
  return removed_n
end

-- A crawl's weight (`crawlweight`, crawl -> a whole number; 1 when absent), read once per call
-- (CRAWL.weighted: whether any crawl has one; CRAWL.weights: by crawl; reset by begin()).
function CRAWL.weight(crawl)
  if CRAWL.weighted == 'unread' then
    local n = redis.pcall('HLEN', BASE .. ':crawlweight')
    CRAWL.weighted, CRAWL.weights = type(n) == 'number' and n > 0, {}
  end
  if not CRAWL.weighted then
    return 1
  end
  local w = CRAWL.weights[crawl]
  if not w then
    local stored = redis.pcall('HGET', BASE .. ':crawlweight', crawl)
    w = math.max(1, type(stored) == 'string' and tonumber(stored) or 1)
    CRAWL.weights[crawl] = w
  end
  return w
end

-- The first of `n` consecutive units for a crawl's items queued on a host now, and the crawl's
-- weight w: the i-th item (from 0) gets the tag floor((first + i) / w), so a crawl of weight w
-- has w items to each tag of a crawl of weight 1 (start-time fair queuing, one server per host,
-- tags of 1/w). A crawl with nothing queued on the host starts at the host's virtual time (the
-- tag of its last leased crawl item), which so goes next there; else one unit past the crawl's
-- last unit there (or the virtual time, if later), so a crawl that queued much on the host is
-- served in turn with the others instead of first. The crawl's last unit is left at the last
-- of the n. An item put back at the front (release) gets the virtual time: it is next. A rank
-- holds 2^37 tags per priority. known: the host's `*` and crawl fields, when the caller read
-- them.
function CRAWL.tag(crawl, host, n, at_front, known)
  local tags = CRAWL.tags(host)
  local v, last = unpack(known or redis.call('HMGET', tags, '*', crawl))
  local w = CRAWL.weight(crawl)
  v = (tonumber(v or '0') or 0) * w
  if at_front then
    return v, w
  end
  local first = last and math.max(v, (tonumber(last) or 0) + 1) or v
  redis.call('HSET', tags, crawl, int(first + n - 1))
  return first, w
end

-- enqueue_ready for a record of a named crawl: with a new tag, at the end of its crawl lane on
-- its host (at the front, put back by a release: its tag is then the lowest). Its lane's
-- listing and its host's rank fall to it when it is the lane's new head (the host's unless
-- politeness holds it in `wait`). Returns the host, or false (nothing changed) when the lane,
-- the host's crawl lanes or its tags hold a foreign value.
function CRAWL.enqueue(rec, ts, host, prio, crawl, at_front)
  local member, listed = CRAWL.member(prio, crawl), CRAWL.lanes(host)
  local lane = CRAWL.lane(member, host)
  local before = redis.pcall('LLEN', lane)
  local others = redis.pcall('ZCARD', listed)
  if type(before) == 'table' or type(others) == 'table' or type(redis.pcall('HLEN', CRAWL.tags(host))) == 'table' then
    return false
  end
  own_format(PROTOCOL_DIGITS)
  local unit, w = CRAWL.tag(crawl, host, 1, at_front)
  local tag = math.floor(unit / w)
  redis.call(at_front and 'LPUSH' or 'RPUSH', lane, CRAWL.retag(rec, tag))
  counter('ready', 1)
  CRAWL.count(crawl, 'ready', 1)
  if before > 0 and not at_front then
    return host
  elseif before == 0 then
    CRAWL.index(crawl, host)
  end
  -- the lane's new head: its listing and age, and the host's rank unless politeness holds it
  local r = rank(prio, tag)
  CRAWL.lane_listed(member, host, redis.call('ZADD', listed, int(r), member))
  redis.call('ZADD', K_HEADS, int(ts), CRAWL.head(member, host))
  CRAWL.head_age(member, host, int(ts))
  if others == 0 and redis.call('EXISTS', hp_key(host), lane_key(host, 0)) == 0 then
    counter('hosts', 1)
  end
  local held = redis.call('ZSCORE', K_WAIT, host)
  if not held then
    redis.call('ZADD', K_READY, 'LT', int(r), host)
  else
    CRAWL.queued_on_held(host, held)
  end
  return host
end

-- List a new lane of a host in its priority set, creating the set only for a priority other
-- than 0 (with 0 in it too when the host's priority-0 lane holds items). Returns whether the
-- host had no ready items before (no set, no priority-0 lane other than a new one and no
-- crawl lane), and
-- what undoes the listing ('set': the set was created; else the member added, or nil); nil,
-- with nothing written, when the set holds a foreign value (ZCARD tells that and whether the
-- set is there, in one command).
local function host_lane_added(host, prio)
  local hp = hp_key(host)
  local listed = redis.pcall('ZCARD', hp)
  if type(listed) == 'table' then
    return nil
  end
  if listed > 0 then
    if prio == 0 then
      redis.call('ZADD', hp, '0', '0')
      return false, '0'
    end
    redis.call('ZADD', hp, int(-prio), int(prio))
    return false, int(prio)
  end
  -- (the host's crawl lane, in a queue with crawls, may hold its ready items)
  local crawl_empty = not CRAWL.on() or redis.call('EXISTS', CRAWL.lanes(host)) == 0
  if prio == 0 then
    own_format('3')
    return crawl_empty
  end
  if redis.call('EXISTS', lane_key(host, 0)) == 1 then
    redis.call('ZADD', hp, int(-prio), int(prio), '0', '0')
    return false, 'set'
  end
  redis.call('ZADD', hp, int(-prio), int(prio))
  return crawl_empty, 'set'
end

-- Append (or, with at_front, prepend) a record to its host lane and keep the host's
-- scheduling, the lane's head age and the ready/hosts counters right. Returns the record's host,
-- or false (and changes nothing) for a record that cannot be read, or whose host's lane or
-- priority set holds a foreign value (another program wrote it): the caller dead-letters it
-- instead, so no item is lost and no call fails half-way.
local function enqueue_ready(rec, at_front)
  local id, ts, host, prio, _, _, _, crawl = rec_head(rec)
  if not id then
    return false
  elseif crawl then
    return CRAWL.enqueue(rec, ts, host, prio, crawl, at_front)
  end
  local lane = lane_key(host, prio)
  local len = redis.pcall(at_front and 'LPUSH' or 'RPUSH', lane, rec)
  if type(len) == 'table' then
    return false
  end
  local new_host, listing = false, nil
  if len == 1 then
    -- a new lane
    new_host, listing = host_lane_added(host, prio)
    if new_host == nil then
      redis.call('UNLINK', lane)
      return false
    end
  end
  if at_front or len == 1 then
    -- this record is now the head of its lane: its age and the host's rank follow it
    local best
    local held = redis.call('ZSCORE', K_WAIT, host)
    if not held then
      local ok, rank_or_error = pcall(host_best, host)
      if not ok then
        -- another lane of the host holds a foreign value: the record and a new lane's listing
        -- are taken back
        redis.call(at_front and 'LPOP' or 'RPOP', lane)
        if listing == 'set' then
          redis.call('UNLINK', hp_key(host))
        elseif listing then
          redis.call('ZREM', hp_key(host), listing)
        end
        return false
      end
      best = rank_or_error
    end
    redis.call('ZADD', K_HEADS, int(ts), head_member(host, prio))
    if best then
      redis.call('ZADD', K_READY, int(best), host)
    else
      CRAWL.queued_on_held(host, held)
    end
  end
  if new_host then
    counter('hosts', 1)
  end
  counter('ready', 1)
  return host
end

local function to_dead(id, rec)
  redis.call('ZADD', K_DEAD, NOW_DIGITS, id)
  redis.call('HSET', K_DEADREC, id, rec)
  counter('dead_total', 1)
  CRAWL.count(CRAWL.of(rec), 'dead', 1)
  local _, _, host = rec_head(rec)
  if host then
    host_count_add(K_HOSTDEAD, host, 1)
  end
end

-- Wake blocked lease calls (BLPOP on the wake key). Markers are capped at 32 and expire 30 s
-- after the last wake, so a queue nobody waits on does not accumulate them. A busy queue that
-- no call waits on keeps 32: its list only has its expiry pushed back (its length read first
-- instead of pushing and trimming: one command less).
local function wake(n)
  if n > 0 then
    local m = math.min(n, 32 - redis.call('LLEN', K_WAKE))
    if m > 0 then
      local marks = {}
      for i = 1, m do
        marks[i] = '1'
      end
      redis.call('LPUSH', K_WAKE, unpack(marks))
    end
    redis.call('PEXPIRE', K_WAKE, '30000')
  end
end

-- Make a host leasable now (it left `wait`): into `ready` at its best head's rank if it has
-- ready items, waking blocked lease calls. Returns whether it had any.
local function ready_now(host)
  local best = host_best(host)
  if best then
    redis.call('ZADD', K_READY, int(best), host)
    wake(1)
  end
  return best ~= nil
end

-- Hold a host whose lane or priority set holds a foreign value (another program wrote it), as a
-- pause until resumed: leases go on with the other hosts and nothing of it is touched. Resuming
-- it once the key is repaired makes it leasable again (while the value is there, a resume
-- answers CORRUPT and changes nothing).
local function hold_corrupt_host(host)
  redis.call('ZREM', K_READY, host)
  redis.call('ZADD', K_WAIT, int(PAUSED_FOREVER), host)
  redis.pcall('HSET', K_HOSTPAUSE, host, int(PAUSED_FOREVER) .. ':')
end

-- Put a host that left `wait` into `ready` at its best head's rank, if it has ready items; a
-- host whose lane or priority set holds a foreign value is held instead.
local function ready_at_rank(host)
  local ok, best = pcall(host_best, host)
  if not ok then
    hold_corrupt_host(host)
  elseif best then
    redis.call('ZADD', K_READY, int(best), host)
  end
end

-- Politeness delay of a host in ms: per-host override or the caller's default, plus the adaptive
-- extra that rate-limited nacks build up.
local function host_delay(host, default_delay, any_override, any_adaptive)
  local d = default_delay
  if any_override then
    local o = redis.call('HGET', K_HOSTDELAY, host)
    if o then
      d = tonumber(o) or d
    end
  end
  if any_adaptive then
    local a = redis.call('HGET', K_ADAPTIVE, host)
    if a then
      d = d + (tonumber(a) or 0)
    end
  end
  return d
end

