-- Check that each listed key is absent or of the expected type ({key, type, key, type, ...}).
-- Scripts call this before their first write for the fixed keys they write and have not read
-- with a typed command yet: a foreign value at a queue key is reported, nothing is changed.
-- Each key is probed with its type's length command, which fails on another type and answers
-- with a number (TYPE answers with a status, which costs a Lua table); TYPE is only asked on a
-- failure, for the message.
local LENGTH_OF = { hash = 'HLEN', zset = 'ZCARD', set = 'SCARD', list = 'LLEN' }
local function expect_types(list)
  for i = 1, #list, 2 do
    local key, expected = list[i], list[i + 1]
    if type(redis.pcall(LENGTH_OF[expected], key)) == 'table' then
      fail('CORRUPT', 'key ' .. key .. ' holds a ' .. redis.call('TYPE', key).ok .. ', expected a ' .. expected)
    end
  end
end

-- The same check for sorted-set keys, in one command: ZINTERCARD type-checks every key it is
-- given before it computes anything, and a key that never exists (the probe) makes the
-- intersection empty at once. Only on a failure are the keys checked one by one, for the
-- message naming the key.
local function expect_zsets(keys)
  local r = redis.pcall('ZINTERCARD', int(#keys + 1), K_PROBE, unpack(keys))
  if type(r) == 'table' and r.err then
    local list = {}
    for _, key in ipairs(keys) do
      list[#list + 1] = key
      list[#list + 1] = 'zset'
    end
    expect_types(list)
    error(r)
  end
end

-- The number of the call under way (raised by begin): what a call reads once for its parts
-- (ACK.reads, FLIGHT.settings) is kept under it, and read again by the next call.
local CALL = { serial = 0 }

-- A priority (a number, or the digits of one) as it appears in keys and members: a number
-- concatenated as is would be formatted with '%.14g'.
local function priority_digits(prio)
  if type(prio) == 'string' then
    return prio
  end
  return prio == 0 and '0' or int(prio)
end

-- The number of a priority's digits (from a lane's `hp` member, a rank or the client); most
-- are '0', which needs no conversion.
local function priority_number(digits)
  return digits == '0' and 0 or digits + 0
end

local function lane_key(host, prio)
  return BASE .. ':l:' .. priority_digits(prio) .. ':' .. host
end

local function hp_key(host)
  return BASE .. ':hp:' .. host
end

-- A crawl lane is named by its member `<priority>:<crawl>` in its host's set of crawl lanes
-- (member -> the rank of the lane's head); the lane is the list of the crawl's records of that
-- priority on the host, in tag order; its member in `heads` is '*' .. member .. ':' .. host.
function CRAWL.member(prio, crawl)
  return priority_digits(prio) .. ':' .. crawl
end
-- The crawl of a lane's member (`<priority>:<crawl>`).
function CRAWL.member_crawl(member)
  return string.match(member, '^%-?%d+:(.*)$')
end
function CRAWL.lane(member, host)
  return BASE .. ':lz:' .. member .. ':' .. host
end
function CRAWL.lanes(host)
  return BASE .. ':hl:' .. host
end
function CRAWL.head(member, host)
  return '*' .. member .. ':' .. host
end
-- A host's tags (CRAWL.tag): field '*' the tag of its last leased crawl item (the host's
-- virtual time), field <crawl> the last tag given to that crawl's item there while its lane
-- holds items.
function CRAWL.tags(host)
  return BASE .. ':hv:' .. host
end
-- Whether the queue may hold crawl lanes: only a crawl's items mark a queue 7.
function CRAWL.on()
  return STORED_FORMAT == PROTOCOL_DIGITS
end

-- Mark the queue with the protocol a write needs before making it: 3 for a host lane without
-- the host's priority set or a record without its attempt count (protocol 2 clients cannot read
-- them), 4 (the default) for a record without its host (protocol 3 clients cannot). Older
-- clients then refuse the queue instead of losing its hosts or items. The marker only rises; a
-- new queue is marked 4 by its first seed.
local function own_format(digits)
  digits = digits or RECORD_FORMAT
  if STORED_FORMAT ~= PROTOCOL_DIGITS and (not STORED_FORMAT or STORED_FORMAT < digits) then
    -- (a base without a format has no stored split: the call's is the one)
    local split = SPLIT or SPLIT_ASKED
    if not STORED_FORMAT and split > 1 then
      -- a new shard of several: its split is fixed with its first write
      redis.call('HSET', K_META, 'format', digits, 'split', int(split))
    else
      redis.call('HSET', K_META, 'format', digits)
    end
    STORED_FORMAT = digits
  end
end

-- The priorities of a host's lanes, best first. The priority set `hp:<host>` lists them all; a
-- host whose only lane is priority 0 (most hosts) has no set (112 bytes less each), and so does
-- a host with no lanes: both answer '0', whose lane is then read empty.
local function host_priorities(host)
  local prios = redis.call('ZRANGE', hp_key(host), '0', '-1')
  if prios[1] == nil then
    prios[1] = '0'
  end
  return prios
end

-- A host's ready items (the lengths of its lanes and its crawl lane) and the number of lanes
-- read.
local function host_ready(host)
  local prios = host_priorities(host)
  local n = 0
  for _, prio in ipairs(prios) do
    n = n + redis.call('LLEN', lane_key(host, prio))
  end
  if CRAWL.on() then
    local crawls = redis.call('ZRANGE', CRAWL.lanes(host), '0', '-1')
    for _, member in ipairs(crawls) do
      n = n + redis.call('LLEN', CRAWL.lane(member, host))
    end
    return n, #prios + #crawls
  end
  return n, #prios
end

