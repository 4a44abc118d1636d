-- crawlq script: nack
-- protocol: 7
-- flags: allow-oom
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 max attempts, 4 backoff kind ('fixed' | 'exponential'),
--       5 backoff base ms, 6 backoff cap ms, 7 backoff jitter (0..1), 8 default host delay ms,
--       9 adaptive step ms, 10 adaptive max ms, 11 retry after max ms (0: no cap), 12 lease
--       count N, then 8 fields per lease:
--       lease key ('<token>:<id>'), retry (0/1), delay ms (-1 = backoff policy), reason (a JSON
--       string literal, '' keeps the stored last_error), rate limited (0/1), random number in
--       [0, 1) for jitter, payload (canonical JSON stored in place of the item's payload, ''
--       keeps it), retry after (the host's Retry-After: ms from now, or '@' and a time in ms;
--       '' or absent: none)
-- reply: {'retried'|'dead'|'lost', ...} one per lease; 'lost': the lease is not live (stale
--        token, or a token of another item) and nothing changed
-- A failed attempt counts against max attempts; a rate-limited nack does not (the host was
-- busy, not the item) but doubles the host's adaptive extra delay (from the step, up to the
-- max) and holds the host back for its full delay from now. A retry after holds the retry and
-- the host at least until then (whether or not rate limited), at most the retry after max. A
-- record no script can read goes to dead letters as it is.

-- The nack's steps (scripts.rs, STEPS_END): each call runs the body at the end.
local NACK = {}

-- The call's retry policy (ARGV 3-11).
function NACK.policy(argv)
  return {
    max_attempts = tonumber(argv[3]), kind = argv[4],
    base = tonumber(argv[5]), cap = tonumber(argv[6]), jitter = tonumber(argv[7]),
    default_delay = tonumber(argv[8]), step = tonumber(argv[9]), adaptive_max = tonumber(argv[10]),
    retry_after_max = tonumber(argv[11]),
  }
end

-- Hold a host in `wait` until at least `at` (FLIGHT.hold_until: a paused host remembers it for
-- its resume); a host held full keeps its hold and is held until then once a slot frees (its
-- hostfull time is raised instead).
function NACK.hold_host(host, at)
  local full_due = redis.call('HGET', FLIGHT.full, host)
  if full_due then
    if (tonumber(full_due) or 0) < at then
      redis.call('HSET', FLIGHT.full, host, int(at))
    end
    return
  end
  FLIGHT.hold_until(host, at)
end

-- The hold a host asked for (Retry-After: ms from now, or '@' and a time in ms), in ms from
-- now (0: none), at most `max` ms (0: no cap).
function NACK.retry_after_ms(after, max)
  if after == '' then
    return 0
  end
  local ms
  if string.byte(after, 1) == 64 then
    ms = math.max((tonumber(string.sub(after, 2)) or NOW) - NOW, 0)
  else
    ms = math.max(tonumber(after) or 0, 0)
  end
  if max > 0 and ms > max then
    return max
  end
  return ms
end

-- A rate-limited answer doubles the host's adaptive extra delay (from the step, up to the max)
-- and holds the host for its full delay, or its retry after when longer; a retry after alone
-- holds it that long.
function NACK.slow_down(policy, host, rate_limited, retry_after)
  if rate_limited then
    local extra = tonumber(redis.call('HGET', K_ADAPTIVE, host) or '0') or 0
    extra = math.min(math.max(extra * 2, policy.step), policy.adaptive_max)
    redis.call('HSET', K_ADAPTIVE, host, int(extra))
    local hold = host_delay(host, policy.default_delay, true, true)
    NACK.hold_host(host, NOW + math.max(hold, retry_after))
  elseif retry_after > 0 then
    NACK.hold_host(host, NOW + retry_after)
  end
end

-- The retry's delay in ms after `failures` failed attempts, by the policy's backoff.
function NACK.backoff(policy, failures, random)
  local d = policy.base
  if policy.kind == 'exponential' then
    d = policy.base * 2 ^ (failures - 1)
  end
  if d > policy.cap then
    d = policy.cap
  end
  return math.floor(d * (1 - policy.jitter * random))
end

-- The item goes to dead letters, and leaves the live set. `call` holds the call's counts and
-- the seen set's level once read.
function NACK.bury(call, lease_key, rec, fresh, reason)
  call.level = call.level or current_level(seen_count())
  live_remove_rec(rec, call.level)
  -- a record no script can read is kept as it is, with the reason after a newline (no
  -- stored record holds one: JSON escapes it), so its dead letter still says why
  if not fresh and reason ~= '' then
    rec = rec .. '\n' .. reason
  end
  to_dead(lease_key_id(lease_key), fresh or rec)
  call.died = call.died + 1
end

-- The item is retried after d ms: ready now (already in its lane: enqueue_ready), or delayed
-- (its member added to `call.delayed`, written with one ZADD at the end).
function NACK.retry_in(call, fresh, host, d, crawl)
  if d > 0 then
    local delayed = call.delayed
    delayed[#delayed + 1] = int(NOW + d)
    delayed[#delayed + 1] = fresh
    add_delayed(host, 1)
    CRAWL.count(crawl, 'delayed', 1)
  else
    call.immediate = call.immediate + 1
  end
  call.retried = call.retried + 1
end

--- per call ---
local policy, n = NACK.policy(ARGV), tonumber(ARGV[12])
expect_types({ K_LEASES, 'hash', K_LEASED, 'zset', K_READY, 'zset', K_WAIT, 'zset', K_HEADS, 'zset',
  K_DELAYED, 'zset', K_DEAD, 'zset', K_DEADREC, 'hash', K_HOSTDELAY, 'hash', K_ADAPTIVE, 'hash',
  K_WAKE, 'list', K_HOSTDEAD, 'hash', K_HOSTDELAYED, 'hash', FLIGHT.full, 'hash', K_HOSTPAUSE, 'hash' })
-- One read fetches every lease's record; the leases are removed and the delayed retries added
-- with one multi-member call each at the end (no later iteration reads them).
local lease_keys = {}
for i = 0, n - 1 do
  lease_keys[i + 1] = ARGV[13 + i * 8]
end
local recs = call_chunked('HMGET', K_LEASES, lease_keys)
local out = {}
local call = { immediate = 0, retried = 0, died = 0, level = nil, delayed = {} }
-- an answer frees its host's in-flight slot (the prelude, FLIGHT.answered)
local flights = FLIGHT.any()
local gone, answered = {}, {}
for i = 0, n - 1 do
  local a = 13 + i * 8
  local lease_key, retry, explicit = ARGV[a], ARGV[a + 1] == '1', tonumber(ARGV[a + 2])
  local reason, rate_limited, random = ARGV[a + 3], ARGV[a + 4] == '1', tonumber(ARGV[a + 5])
  local payload, retry_after = ARGV[a + 6], NACK.retry_after_ms(ARGV[a + 7] or '', policy.retry_after_max)
  local rec = recs[i + 1]
  if not rec or answered[lease_key] then
    out[i + 1] = 'lost'
  else
    answered[lease_key] = true
    gone[#gone + 1] = lease_key
    local id, _, host, _, attempt, _, _, crawl = rec_head(rec)
    CRAWL.count(crawl, 'leased', -1)
    local failures = attempt
    if id and not rate_limited then
      failures = attempt + 1
    end
    local fresh = id and rec_rebuild(rec, NOW, failures, reason ~= '' and reason or nil, payload)
    if flights and host then
      FLIGHT.answered(host, 1, lease_key)
    end

    if fresh then
      NACK.slow_down(policy, host, rate_limited, retry_after)
    end

    local dies = not fresh or not retry or failures >= policy.max_attempts
    local d = explicit
    if not dies then
      if d < 0 then
        d = rate_limited and 0 or NACK.backoff(policy, failures, random)
      end
      if d < retry_after then
        d = retry_after
      end
      -- a retry into a lane that holds a foreign value goes to dead letters (enqueue_ready)
      if d <= 0 then
        dies = not enqueue_ready(fresh, false)
      end
    end
    if dies then
      NACK.bury(call, lease_key, rec, fresh, reason)
      out[i + 1] = 'dead'
    else
      NACK.retry_in(call, fresh, host, d, crawl)
      out[i + 1] = 'retried'
    end
  end
end
call_chunked('HDEL', K_LEASES, gone)
call_chunked('ZREM', K_LEASED, gone)
local delayed = call.delayed
call_chunked('ZADD', K_DELAYED, delayed)
counter('nacked_total', call.retried + call.died)
counter('retried_total', call.retried)
wake(call.immediate)
-- the earliest time a retry comes due (reported with the flag 'r')
local first_due = call.immediate > 0 and NOW or -1
for i = 1, #delayed, 2 do
  local due = delayed[i] + 0
  if first_due < 0 or due < first_due then
    first_due = due
  end
end
return reported(out, first_due)
