-- crawlq script: common (prelude)
-- protocol: 1
-- flags: prepended to every script (the script's own flags apply)
-- KEYS: 1 meta, 2 ready, 3 wait, 4 heads, 5 delayed, 6 leased, 7 leases, 8 dead,
--       9 deadrec, 10 hostdelay, 11 adaptive, 12 wake
-- ARGV: 1 key base (prefix of per-host and seen keys), 2 clock override in ms ('' = server TIME),
--       then the operation's own arguments from ARGV[3] on
-- reply: none; this prelude is prepended to every operation script before it is loaded
-- Shared helpers: record parsing and rebuilding, host lanes, host scheduling, dead letters.

local PROTOCOL = 1
local K_META, K_READY, K_WAIT, K_HEADS = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local K_DELAYED, K_LEASED, K_LEASES = KEYS[5], KEYS[6], KEYS[7]
local K_DEAD, K_DEADREC, K_HOSTDELAY, K_ADAPTIVE, K_WAKE = KEYS[8], KEYS[9], KEYS[10], KEYS[11], KEYS[12]
local BASE = ARGV[1]

local stored_format = redis.call('HGET', K_META, 'format')
if stored_format and tonumber(stored_format) > PROTOCOL then
  return redis.error_reply('CRAWLQ_PROTOCOL queue was written with format ' .. stored_format
    .. '; this client speaks format ' .. PROTOCOL)
end

local NOW
if ARGV[2] ~= '' then
  NOW = tonumber(ARGV[2])
else
  local t = redis.call('TIME')
  NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local NOW_DIGITS = string.format('%d', NOW)

-- Host ranks order due hosts by the head of their best lane: priority first (higher first),
-- then arrival sequence. Both parts fit in the 53 exact bits of a ZSET score.
local SEQ_SPAN = 137438953472 -- 2^37 sequence numbers per priority
local function rank(prio, seq)
  return (32767 - prio) * SEQ_SPAN + seq
end

-- A number as the digits Redis expects. Scores and ids handed to redis.call per item go through
-- this: Lua would otherwise format them with '%.17g', which costs more than the command.
local function int(x)
  return string.format('%d', x)
end

local function lane_key(host, prio)
  return BASE .. ':l:' .. prio .. ':' .. host
end

local function hp_key(host)
  return BASE .. ':hp:' .. host
end

-- Record layout (fixed field order, see docs/PROTOCOL.md):
-- {"v":1,"id":"<id>","ts":<ms>,"host":"<host>"[,"priority":<p>],"attempt":<n>
--   [,"url":"<url>"][,"last_error":"<text>"][,"payload":<json>]}
local function rec_head(rec)
  local _, e, id, ts, host = string.find(rec, '^{"v":1,"id":"([^"]*)","ts":(%d+),"host":"([^"]*)",')
  if not e then
    error('CRAWLQ_PROTOCOL unreadable record: ' .. string.sub(rec, 1, 60))
  end
  local prio = 0
  local _, e2, p = string.find(rec, '^"priority":(%-?%d+),', e + 1)
  if e2 then
    prio = tonumber(p)
    e = e2
  end
  local _, e3, a = string.find(rec, '^"attempt":(%d+)', e + 1)
  if not e3 then
    error('CRAWLQ_PROTOCOL unreadable record: ' .. string.sub(rec, 1, 60))
  end
  return id, tonumber(ts), host, prio, tonumber(a), e3 + 1
end

local function rec_prefix(id, ts, host, prio, attempt)
  local s = '{"v":1,"id":"' .. id .. '","ts":' .. int(ts) .. ',"host":"' .. host .. '",'
  if prio ~= 0 then
    s = s .. '"priority":' .. int(prio) .. ','
  end
  return s .. '"attempt":' .. int(attempt)
end

-- Rewrite the mutable fields of a record. last_error_json is a JSON string literal, or nil to
-- keep the stored one.
local function rec_rebuild(rec, ts, attempt, last_error_json)
  local id, _, host, prio, _, pos = rec_head(rec)
  local rest = string.sub(rec, pos)
  local url_part = ''
  local _, e, u = string.find(rest, '^(,"url":"[^"]*")')
  if e then
    url_part = u
    rest = string.sub(rest, e + 1)
  end
  local error_part = ''
  if string.find(rest, '^,"last_error":"') then
    local i = 16 -- first character of the string's contents
    while true do
      local c = string.find(rest, '["\\]', i)
      if string.sub(rest, c, c) == '\\' then
        i = c + 2
      else
        i = c + 1
        break
      end
    end
    error_part = string.sub(rest, 1, i - 1)
    rest = string.sub(rest, i)
  end
  if last_error_json then
    error_part = ',"last_error":' .. last_error_json
  end
  return rec_prefix(id, ts, host, prio, attempt) .. url_part .. error_part .. rest
end

-- The id (a number) and enqueue time (its digits, as stored) of a record, without parsing the
-- rest. The time stays a string: it is mostly handed straight back to Redis as a score.
local function rec_seq_ts(rec)
  local _, _, id, ts = string.find(rec, '^{"v":1,"id":"([^"]*)","ts":(%d+),')
  return tonumber(id), ts
end

-- The earlier of two enqueue times given as digit strings (either may be nil).
local function earlier(a, b)
  if not a or (b and tonumber(b) < tonumber(a)) then
    return b
  end
  return a
end

-- Run a variadic command (HSET, ZADD, ZREM, RPUSH) over a long argument list, in chunks that
-- stay under Lua's unpack limit; chunks have an even length, so pairs stay together.
local function call_chunked(cmd, key, args)
  for first = 1, #args, 4000 do
    redis.call(cmd, key, unpack(args, first, math.min(first + 3999, #args)))
  end
end

local function counter(field, delta)
  if delta ~= 0 then
    redis.call('HINCRBY', K_META, field, delta)
  end
end

-- Put a host in the ready set unless politeness still holds it back in the wait set.
local function schedule(host, host_rank)
  if not redis.call('ZSCORE', K_WAIT, host) then
    redis.call('ZADD', K_READY, 'LT', int(host_rank), host)
  end
end

-- The rank of the head of a host's best lane, and the oldest enqueue time among lane heads.
-- Returns nil when the host has no ready items.
local function host_heads(host)
  local prios = redis.call('ZRANGE', hp_key(host), 0, -1)
  if #prios == 0 then
    return nil
  end
  local best, oldest
  for i, p in ipairs(prios) do
    local seq, ts = rec_seq_ts(redis.call('LINDEX', lane_key(host, p), 0))
    if i == 1 then
      best = rank(tonumber(p), seq)
    end
    oldest = earlier(oldest, ts)
  end
  return best, oldest
end

-- Append (or, with at_front, prepend) a record to its host lane and keep the host's
-- scheduling, head age and the ready/hosts counters right. Returns 1.
local function enqueue_ready(rec, at_front)
  local _, ts, host, prio = rec_head(rec)
  local hp = hp_key(host)
  local lane = lane_key(host, prio)
  if redis.call('EXISTS', hp) == 0 then
    counter('hosts', 1)
  end
  local len
  if at_front then
    len = redis.call('LPUSH', lane, rec)
  else
    len = redis.call('RPUSH', lane, rec)
  end
  redis.call('ZADD', hp, -prio, prio)
  if at_front or len == 1 then
    -- this record is now the head of its lane: recompute the host's rank and head age exactly
    local best, oldest = host_heads(host)
    if not redis.call('ZSCORE', K_WAIT, host) then
      redis.call('ZADD', K_READY, int(best), host)
    end
    redis.call('ZADD', K_HEADS, oldest, host)
  end
  counter('ready', 1)
  return 1
end

local function to_dead(id, rec)
  redis.call('ZADD', K_DEAD, NOW_DIGITS, id)
  redis.call('HSET', K_DEADREC, id, rec)
  counter('dead_total', 1)
end

-- Wake blocked lease calls (BLPOP on the wake key). Markers are capped and expire, so a queue
-- nobody waits on does not accumulate them.
local function wake(n)
  if n > 0 then
    local m = math.min(n, 32)
    local marks = {}
    for i = 1, m do
      marks[i] = '1'
    end
    redis.call('LPUSH', K_WAKE, unpack(marks))
    redis.call('LTRIM', K_WAKE, 0, 31)
    redis.call('PEXPIRE', K_WAKE, 30000)
  end
end

-- Politeness delay of a host in ms: per-host override or the caller's default, plus the adaptive
-- extra that rate-limited nacks build up.
local function host_delay(host, default_delay, any_override, any_adaptive)
  local d = default_delay
  if any_override then
    local o = redis.call('HGET', K_HOSTDELAY, host)
    if o then
      d = tonumber(o)
    end
  end
  if any_adaptive then
    local a = redis.call('HGET', K_ADAPTIVE, host)
    if a then
      d = d + tonumber(a)
    end
  end
  return d
end

-- Move expired leases back to their lanes, or to dead letters once max_attempts is reached.
local function reclaim_expired(limit, max_attempts)
  local tokens = redis.call('ZRANGEBYSCORE', K_LEASED, '-inf', NOW_DIGITS, 'LIMIT', 0, limit)
  local requeued, died = 0, 0
  for _, token in ipairs(tokens) do
    local rec = redis.call('HGET', K_LEASES, token)
    if rec then
      redis.call('HDEL', K_LEASES, token)
      local id, _, _, _, attempt = rec_head(rec)
      local fresh = rec_rebuild(rec, NOW, attempt + 1, '"lease expired"')
      if attempt + 1 >= max_attempts then
        to_dead(id, fresh)
        died = died + 1
      else
        enqueue_ready(fresh, false)
        requeued = requeued + 1
      end
    end
  end
  if #tokens > 0 then
    redis.call('ZREM', K_LEASED, unpack(tokens))
    counter('reclaimed_total', #tokens)
  end
  return requeued, died
end
