-- crawlq script: host_config
-- protocol: 7
-- flags: allow-oom
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 host key, 4 politeness delay ms for this host ('' removes the
--       override, so the workers' default applies again; '-' leaves it as it is),
--       5 pause ('-' leaves it as it is, '' resumes, '*' pauses until resumed, digits pause
--       for that many ms from now; optional, '-' when absent), 6 the host's own in-flight
--       limit (digits, '0' for none whatever the default; '' removes it; '-' or absent leaves
--       it), 7 the workers' default in-flight limit (digits, '0' or absent: none; decides
--       whether a host held full may be leased once its own limit is removed), 8 the host's
--       delay from its robots.txt Crawl-delay (ms, capped by the client; '' removes it; '-' or
--       absent leaves it): written to `hostdelay` only when the operator set no delay there
--       (`hostrobots` lists the hosts whose `hostdelay` came from robots.txt), 9 the host's own
--       pacing ('lease', 'answer' or 'answer:<factor>'; '' removes it; '-' or absent leaves
--       it), 10 the workers' pacing as `lease` takes it (decides, with 7, whether a host held
--       full may be leased once its own limit or mode changes)
-- reply: {previous override ms or -1, adaptive extra ms, ready items of the host,
--         held back until (ms) or -1, paused until (ms), 0 paused until resumed or -1,
--         budget in force (the host's own, else the queue's default) or -1, URLs the host
--         added while budgets were on, 1 while the host is being deleted (host_delete) else 0,
--         the host's own in-flight limit or -1, its items counted in flight, 1 while it is
--         held full (as many items leased as its limit allows) else 0, the override in force
--         now (ms) or -1, 1 when it came from robots.txt else 0, the host's own pacing or
--         '' (none: the workers' applies)}
-- A paused host is held in `wait` at the end of its pause (PAUSED_FOREVER until resumed), so
-- every script that makes it ready leaves it there. Its `hostpause` entry keeps the
-- politeness hold it had, which a resume before the end restores. While the host is being
-- deleted (a hostdeleting entry) the deletion holds it: a pause or a resume changes nothing.

local host, delay, pause = ARGV[3], ARGV[4], ARGV[5] or '-'
local limit, default_limit = ARGV[6] or '-', tonumber(ARGV[7] or '0') or 0
local own_limit = redis.call('HGET', FLIGHT.limits, host)
local in_flight = tonumber(redis.call('HGET', FLIGHT.counts, host) or '0') or 0
local full_due = redis.call('HGET', FLIGHT.full, host)
local robots, k_robots = ARGV[8] or '-', BASE .. ':hostrobots'
local pacing, default_pacing = ARGV[9] or '-', ARGV[10] or ''
local own_pacing = redis.call('HGET', FLIGHT.pacing, host)
local from_robots = redis.call('SISMEMBER', k_robots, host) == 1
local previous = redis.call('HGET', K_HOSTDELAY, host)
local entry = redis.call('HGET', K_HOSTPAUSE, host)
local held = redis.call('ZSCORE', K_WAIT, host)
held = held and tonumber(held)
local budget = redis.call('HGET', K_HOSTBUDGET, host) or redis.call('HGET', K_META, 'budget')
local budget_used = tonumber(redis.call('HGET', K_HOSTUSED, host) or '0')
local deleting = redis.call('HGET', K_HOSTDELETING, host)
if deleting then
  pause = '-'
end
-- the host's priority set and lanes, read before any write (a foreign value there fails the
-- call with nothing changed; a resume reads them again)
local ready = host_ready(host)
expect_types({ K_ADAPTIVE, 'hash', K_READY, 'zset', K_WAKE, 'list', K_WAIT, 'zset' })

-- the pause in force: its end and the politeness hold from before it (an ended one is none)
local paused_until, hold
if entry then
  local u, h = string.match(entry, '^(%d+):(%d*)$')
  paused_until, hold = tonumber(u), tonumber(h)
  if not paused_until or paused_until <= NOW then
    paused_until, hold = nil, nil
  end
end

local override = previous
-- The host's delay: the operator's (or its removal), else robots.txt's where the operator set
-- none; sets `override` and `from_robots`.
local function apply_delay()
  if delay ~= '-' then
    -- the operator's delay (or its removal) replaces one from robots.txt
    if delay == '' then
      redis.call('HDEL', K_HOSTDELAY, host)
      override = nil
    else
      redis.call('HSET', K_HOSTDELAY, host, delay)
      override = delay
    end
    if from_robots then
      redis.call('SREM', k_robots, host)
      from_robots = false
    end
  elseif robots ~= '-' and (from_robots or not previous) then
    -- robots.txt sets or removes the delay only where the operator set none
    if robots == '' then
      redis.call('HDEL', K_HOSTDELAY, host)
      redis.call('SREM', k_robots, host)
      override, from_robots = nil, false
    else
      redis.call('HSET', K_HOSTDELAY, host, robots)
      redis.call('SADD', k_robots, host)
      override, from_robots = robots, true
    end
  end
end

-- Pause or resume the host; sets `held`, `paused_until` and `hold`.
local function apply_pause()
  if pause == '' then
    if entry then
      redis.call('HDEL', K_HOSTPAUSE, host)
    end
    if paused_until then
      if hold and hold > NOW then
        held = hold
        redis.call('ZADD', K_WAIT, int(hold), host)
      else
        held = nil
        redis.call('ZREM', K_WAIT, host)
        ready_now(host)
      end
      paused_until = nil
    end
  elseif pause ~= '-' then
    if not paused_until then
      hold = held and held > NOW and held or nil
    end
    paused_until = pause == '*' and PAUSED_FOREVER or NOW + tonumber(pause)
    redis.call('HSET', K_HOSTPAUSE, host, int(paused_until) .. ':' .. (hold and int(hold) or ''))
    redis.call('ZREM', K_READY, host)
    held = math.max(paused_until, hold or 0)
    redis.call('ZADD', K_WAIT, int(held), host)
  end
end

-- Set (digits or a mode) or remove ('') the host's own entry in `key`; returns it.
local function own_entry(key, value)
  if value == '' then
    redis.call('HDEL', key, host)
    return nil
  end
  -- protocol 5 clients would neither count leases nor free slots, nor wait for answers
  own_format(PROTOCOL_DIGITS)
  redis.call('HSET', key, host, value)
  return value
end

-- The host's own in-flight limit and pacing; sets `own_limit`, `own_pacing`, `full_due` and
-- `held`.
local function apply_flight()
  if limit ~= '-' then
    own_limit = own_entry(FLIGHT.limits, limit)
  end
  if pacing ~= '-' then
    own_pacing = own_entry(FLIGHT.pacing, pacing)
  end
  if limit ~= '-' or pacing ~= '-' then
    -- a host held full whose limit now allows another lease may be leased again (a host paced
    -- after the answer has a limit of at least 1)
    local in_force = own_limit and tonumber(own_limit) or default_limit
    if string.byte(own_pacing or default_pacing, 1) == 97 and in_force <= 0 then
      in_force = 1
    end
    if full_due and (in_force <= 0 or in_flight < in_force) then
      FLIGHT.unhold(host, tonumber(full_due) or NOW)
      full_due = nil
      held = redis.call('ZSCORE', K_WAIT, host)
      held = held and tonumber(held)
    end
  end
end

apply_delay()
apply_pause()
apply_flight()

local pause_reply = -1
if paused_until then
  pause_reply = paused_until < PAUSED_FOREVER and paused_until or 0
end
-- a resume or another delay may make the host due sooner: the shard reports now (a lease
-- then reports its true state)
return reported({
  previous and tonumber(previous) or -1,
  tonumber(redis.call('HGET', K_ADAPTIVE, host) or '0'),
  ready,
  held and held < PAUSED_FOREVER and held or -1,
  pause_reply,
  budget and tonumber(budget) or -1,
  budget_used,
  deleting and 1 or 0,
  own_limit and tonumber(own_limit) or -1,
  in_flight,
  full_due and 1 or 0,
  override and tonumber(override) or -1,
  from_robots and 1 or 0,
  own_pacing or '',
}, (delay ~= '-' or pause ~= '-' or robots ~= '-') and NOW or -1)
