-- Whether any host has an in-flight limit (FLIGHT.overrides) or a pacing mode
-- (FLIGHT.paced_hosts) of its own, read once per call: a call that answers leases before it
-- leases (ack_lease, ack_seed_lease) reads them before its first write, so that a foreign value
-- there fails it before anything changes, and its lease takes the same answers (an answer
-- changes neither).
function FLIGHT.settings()
  if FLIGHT.settings_call ~= CALL.serial then
    FLIGHT.settings_call = CALL.serial
    FLIGHT.overrides = redis.call('HLEN', FLIGHT.limits) > 0
    FLIGHT.paced_hosts = redis.call('HLEN', FLIGHT.pacing) > 0
  end
end

-- In-flight limits (docs/PROTOCOL.md section 3, "In flight"). A lease call starts with the
-- workers' default limit (digits, '0' or absent: none) and their pacing ('<mode>:<factor>:<max
-- ms>', mode 'lease' or 'answer'; absent: 'lease'); whether any host has its own limit or mode
-- is read once. Returns whether any lease of this call may count.
function FLIGHT.start(default_digits, pacing)
  FLIGHT.default = tonumber(default_digits or '0') or 0
  FLIGHT.settings()
  -- (a string.byte for the common call: 'a' is 97)
  FLIGHT.answer_default = pacing ~= nil and string.byte(pacing, 1) == 97
  if FLIGHT.answer_default or FLIGHT.paced_hosts then
    local _, factor, max = string.match(pacing or '', '^(%a+):([%d.]*):(%d*)$')
    FLIGHT.factor, FLIGHT.delay_max = factor or '0', max or '0'
  end
  if FLIGHT.default > 0 or FLIGHT.overrides or FLIGHT.answer_default or FLIGHT.paced_hosts then
    expect_types({ FLIGHT.counts, 'hash', FLIGHT.full, 'hash', K_HOSTPAUSE, 'hash', FLIGHT.answers, 'hash' })
    return true
  end
  return false
end

-- The in-flight limit of a host in force for a lease call (0: none).
function FLIGHT.limit(host)
  if FLIGHT.overrides then
    local own = redis.call('HGET', FLIGHT.limits, host)
    if own then
      return tonumber(own) or 0
    end
  end
  return FLIGHT.default
end

-- The delay factor (digits) of a host whose next lease waits after the answer, for a lease
-- call; nil for a host paced after the lease.
function FLIGHT.pace(host)
  local mode = FLIGHT.answer_default and 'answer' or nil
  if FLIGHT.paced_hosts then
    mode = redis.call('HGET', FLIGHT.pacing, host) or mode
  end
  if not mode or string.byte(mode, 1) ~= 97 then
    return nil
  end
  return string.match(mode, '^answer:([%d.]+)$') or FLIGHT.factor
end

-- An item of a host was leased (after FLIGHT.start): under a limit it is counted, and a host
-- that now has as many items leased as its limit allows is held in `wait` until an answer
-- frees a slot, `due` (when its politeness delay lets it be leased again) kept in hostfull.
-- A host paced after the answer has a limit of at least 1, and its answers learn its delay,
-- factor and max from hostanswer. Returns whether the host is held.
function FLIGHT.leased(host, due)
  local limit = FLIGHT.limit(host)
  local factor = (FLIGHT.answer_default or FLIGHT.paced_hosts) and FLIGHT.pace(host)
  if factor then
    if limit <= 0 then
      limit = 1
    end
    redis.call('HSET', FLIGHT.answers, host, int(due - NOW) .. ':' .. factor .. ':' .. FLIGHT.delay_max)
  end
  if limit <= 0 then
    return false
  end
  -- protocol 5 clients would neither count their leases nor free the slots of their answers
  own_format('6')
  if redis.call('HINCRBY', FLIGHT.counts, host, '1') < limit then
    return false
  end
  -- (the lease popped the host from `ready`)
  redis.call('HSET', FLIGHT.full, host, int(due))
  redis.call('ZADD', K_WAIT, int(PAUSED_FOREVER), host)
  return true
end

-- A host held full may be leased again: at `due` (its politeness time) or now. A paused host
-- stays paused: its pause's remembered hold becomes `due`. Blocked lease calls are woken, and
-- the call reports the time (FLIGHT.freed_at).
function FLIGHT.unhold(host, due)
  redis.call('HDEL', FLIGHT.full, host)
  local entry = redis.call('HGET', K_HOSTPAUSE, host)
  if entry then
    local ends = tonumber(string.match(entry, '^(%d+):')) or PAUSED_FOREVER
    redis.call('HSET', K_HOSTPAUSE, host, int(ends) .. ':' .. (due > NOW and int(due) or ''))
    redis.call('ZADD', K_WAIT, int(math.max(ends, due)), host)
    return
  end
  if due > NOW then
    redis.call('ZADD', K_WAIT, int(due), host)
  else
    due = NOW
    redis.call('ZREM', K_WAIT, host)
    ready_at_rank(host)
  end
  wake(1)
  if not FLIGHT.freed_at or due < FLIGHT.freed_at then
    FLIGHT.freed_at = due
  end
end

-- Whether any host has items counted in flight: the answering scripts (ack, nack, release,
-- the reclaim of expired leases) read it once per call and call FLIGHT.answered only then.
function FLIGHT.any()
  if redis.call('HLEN', FLIGHT.counts) > 0 then
    expect_types({ FLIGHT.full, 'hash', K_HOSTPAUSE, 'hash', K_READY, 'zset', K_WAIT, 'zset', K_WAKE, 'list',
      FLIGHT.answers, 'hash' })
    FLIGHT.answering = redis.call('HLEN', FLIGHT.answers) > 0
    if FLIGHT.answering then
      -- (a host paced after the answer reads its own delays: FLIGHT.after_answer)
      expect_types({ K_HOSTDELAY, 'hash', K_ADAPTIVE, 'hash' })
    end
    return true
  end
  return false
end

-- When a host paced after the answer may be leased again after one of its items, leased with
-- `lease_key` ('<token>:<id>'; the token is at least its lease time in microseconds), is
-- answered now: its delay after now (the delay of the lease, or the host's own delay now when
-- longer), or factor x how long the item was leased, within the delay and the max (0: no
-- max). nil for a host paced after the lease.
function FLIGHT.after_answer(host, lease_key)
  local pace = redis.call('HGET', FLIGHT.answers, host)
  if not pace then
    return nil
  end
  local delay, factor, max = string.match(pace, '^(%d+):([%d.]*):(%d*)$')
  local wait = tonumber(delay) or 0
  -- a delay set for the host since the lease (an operator's, a robots.txt Crawl-delay read
  -- while the item was out) counts when it is longer
  local own = redis.call('HGET', K_HOSTDELAY, host)
  if own then
    own = (tonumber(own) or 0) + (tonumber(redis.call('HGET', K_ADAPTIVE, host) or '0') or 0)
    if own > wait then
      wait = own
    end
  end
  factor = tonumber(factor) or 0
  local token = factor > 0 and tonumber(string.match(lease_key or '', '^(%d+):'))
  if token then
    local scaled = math.floor(factor * math.max(NOW - math.floor(token / 1000), 0))
    max = tonumber(max) or 0
    if max > 0 and scaled > max then
      scaled = max
    end
    if scaled > wait then
      wait = scaled
    end
  end
  return NOW + wait
end

-- Hold a host that is not held full in `wait` until `at` at least (a paused host: its pause's
-- remembered hold); a host held longer already is left as it is.
function FLIGHT.hold_until(host, at)
  if at <= NOW then
    return
  end
  local entry = redis.call('HGET', K_HOSTPAUSE, host)
  if entry then
    local ends, hold = string.match(entry, '^(%d+):(%d*)$')
    ends, hold = tonumber(ends) or PAUSED_FOREVER, tonumber(hold) or 0
    if hold < at then
      redis.call('HSET', K_HOSTPAUSE, host, int(ends) .. ':' .. int(at))
      redis.call('ZADD', K_WAIT, int(math.max(ends, at)), host)
    end
    return
  end
  local score = redis.call('ZSCORE', K_WAIT, host)
  if score and score + 0 >= at then
    return
  end
  redis.call('ZREM', K_READY, host)
  redis.call('ZADD', K_WAIT, int(at), host)
end

-- `n` items of a host were answered (acked, nacked, released, taken back on expiry), the
-- last leased with `lease_key`: its count goes down (an item leased while no limit applied
-- was never counted: the count stops at 0) and a host held full may be leased again; a host
-- paced after the answer is held until its delay after this answer.
function FLIGHT.answered(host, n, lease_key)
  local left = redis.call('HINCRBY', FLIGHT.counts, host, int(-n))
  local after = FLIGHT.answering and FLIGHT.after_answer(host, lease_key)
  if left <= 0 then
    redis.call('HDEL', FLIGHT.counts, host)
    if after then
      redis.call('HDEL', FLIGHT.answers, host)
    end
  end
  local due = redis.call('HGET', FLIGHT.full, host)
  if due then
    due = tonumber(due) or NOW
    FLIGHT.unhold(host, after and after > due and after or due)
  elseif after then
    FLIGHT.hold_until(host, after)
  end
end

