-- crawlq script: host_turn
-- protocol: 7
-- flags: allow-oom
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 host key, 4 the workers' default politeness delay (ms), 5 the
--       workers' default in-flight limit (digits, '0' or absent: none), 6 the workers' pacing
--       as `lease` takes it ('<mode>:<factor>:<max ms>'), 7 '1' when the caller holds a lease
--       of this host (the request is a step of that lease's fetch, such as a redirect back to
--       its own host: it runs in the lease's in-flight slot), else '0', 8 the most ms the
--       caller waits for a turn
-- reply: {0, wait}: a turn `wait` ms from now (0: now) is taken: the caller starts its request
--        then, and the host's next lease or turn waits until then + delay(host); {3, wait}:
--        the host's next turn is further away than ARGV 8 allows (nothing taken); {1, -1}:
--        the host has as many items in flight as its limit allows (ask again later: an answer
--        frees a slot); {2, until}: the host is paused until `until` (-1: until resumed).
-- A turn is a request to the host that is not the fetch of one of its items (a redirect hop
-- an HTTP client follows): it is spaced like a lease, but counts in no in-flight slot and
-- changes no item. A host paced after the answer, asked by its own lease, takes its turn its
-- delay after now (the answer that led to the hop arrived now).

local host, own = ARGV[3], ARGV[7] == '1'
expect_types({ K_READY, 'zset', K_WAIT, 'zset', K_HOSTPAUSE, 'hash', K_HOSTDELAY, 'hash', K_ADAPTIVE, 'hash',
  FLIGHT.counts, 'hash', FLIGHT.full, 'hash' })

local entry = redis.call('HGET', K_HOSTPAUSE, host)
if entry then
  local ends = tonumber(string.match(entry, '^(%d+):')) or PAUSED_FOREVER
  if ends > NOW then
    return { 2, ends >= PAUSED_FOREVER and -1 or ends }
  end
end

FLIGHT.start(ARGV[5], ARGV[6])
local answer_paced = FLIGHT.pace(host) ~= nil
local full_due = redis.call('HGET', FLIGHT.full, host)
if not own then
  local limit = FLIGHT.limit(host)
  if answer_paced and limit <= 0 then
    limit = 1
  end
  local in_flight = tonumber(redis.call('HGET', FLIGHT.counts, host) or '0') or 0
  if full_due or (limit > 0 and in_flight >= limit) then
    return { 1, -1 }
  end
end

local gate = NOW
if full_due then
  gate = tonumber(full_due) or NOW
else
  local score = redis.call('ZSCORE', K_WAIT, host)
  if score then
    gate = tonumber(score) or NOW
    if gate >= PAUSED_FOREVER then
      -- held until resumed without a pause entry (a lane another program wrote)
      return { 2, -1 }
    end
  end
end
local delay = host_delay(host, tonumber(ARGV[4]) or 0, true, true)
local at = math.max(gate, NOW)
if own and answer_paced then
  at = math.max(at, NOW + delay)
end
if at - NOW > (tonumber(ARGV[8]) or 0) then
  return { 3, at - NOW }
end
if delay > 0 then
  if full_due then
    redis.call('HSET', FLIGHT.full, host, int(at + delay))
  else
    -- a host with no ready items is remembered in `wait` as one that ran empty during its
    -- delay: an item seeded meanwhile waits too
    redis.call('ZREM', K_READY, host)
    redis.call('ZADD', K_WAIT, int(at + delay), host)
  end
end
return { 0, at - NOW }
