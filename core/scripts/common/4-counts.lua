-- Run a variadic command (HSET, ZADD, ZREM, RPUSH, HDEL, HMGET, ZMSCORE) over a long argument
-- list, in chunks that stay under Lua's unpack limit (about 8,000 values); chunks have an even
-- length, so pairs stay together. Returns the replies of HMGET-like commands concatenated.
local function call_chunked(cmd, key, args)
  local out = {}
  for first = 1, #args, 4000 do
    local r = redis.call(cmd, key, unpack(args, first, math.min(first + 3999, #args)))
    if type(r) == 'table' then
      for _, v in ipairs(r) do
        out[#out + 1] = v
      end
    end
  end
  return out
end

-- Add to a host's item count (hostitems, scored by minus the count so that its ascending order
-- is most items first, then host name); a host holding nothing leaves the set. One ZINCRBY per
-- host: reading every count of a call first (ZMSCORE) and writing them back (ZADD) costs more
-- (each score is formatted and parsed again). The reply is minus the new count: a host left
-- with none (a reply that does not start with '-') is removed.
local function host_items_add(host, delta)
  if delta == 0 then
    return
  end
  local by = delta == 1 and '-1' or delta == -1 and '1' or int(-delta)
  if delta < 0 and string.byte(redis.call('ZINCRBY', K_HOSTITEMS, by, host), 1) ~= 45 then
    redis.call('ZREM', K_HOSTITEMS, host)
  elseif delta > 0 then
    redis.call('ZINCRBY', K_HOSTITEMS, by, host)
  end
end

-- The sorted sets of one member per host or lane (ready, heads, hostitems) are written by every
-- lease and answer. Redis keeps a sorted set of up to zset-max-listpack-entries members (128 by
-- default) as one packed list that each write scans end to end; from a few dozen members on, a
-- skip list costs less per write (a crawl of 100 hosts: 0.82x the instructions per page,
-- docs/cluster.md). Redis turns a packed set into a skip list for good (until the key is
-- emptied) when a member longer than zset-max-listpack-value (64 bytes) is added, so now and
-- then a lease adds such a member to each of them that holds UNPACK.at members or more, and
-- takes it out again in the same call: what the sets hold never changes, only how Redis stores
-- it (docs/PROTOCOL.md, section 5). Once every UNPACK.every calls in a library; never with EVAL,
-- whose calls keep no count.
local UNPACK = {
  every = 64, left = 0, at = 32,
  -- (NUL bytes: never a host or a lane's member; added with NX, so it could not move one)
  member = '\0crawlq: a member longer than a packed sorted set takes, added and taken out at once\0',
}
function UNPACK.host_zsets()
  if LUA_STATE == '' then
    return
  end
  UNPACK.left = UNPACK.left - 1
  if UNPACK.left > 0 then
    return
  end
  UNPACK.left = UNPACK.every
  for _, key in ipairs({ K_READY, K_HEADS, K_HOSTITEMS }) do
    -- (a user whose ACL predates +object|encoding gets an error table: the sets stay as they are)
    local encoding = redis.pcall('OBJECT', 'ENCODING', key)
    if encoding == 'listpack' or encoding == 'ziplist' then
      -- (a foreign packed value, a hash say, fails ZCARD: left to the calls that write it)
      local n = redis.pcall('ZCARD', key)
      if type(n) == 'number' and n >= UNPACK.at
          and redis.call('ZADD', key, 'NX', '0', UNPACK.member) == 1 then
        redis.call('ZREM', key, UNPACK.member)
      end
    end
  end
end

-- Add to a host's count in hostdelayed or hostdead; a count of 0 is removed.
local function host_count_add(key, host, delta)
  if delta ~= 0 and redis.call('HINCRBY', key, host, int(delta)) <= 0 then
    redis.call('HDEL', key, host)
  end
end

-- Per-host changes gathered over a call and written once per host: tally(t, host, delta), then
-- tally_flush(t, add) with host_items_add or a host_count_add bound to its key.
local function tally(t, host, delta)
  local n = t[host]
  if n == nil then
    t[#t + 1] = host
    n = 0
  end
  t[host] = n + delta
end
local function tally_flush(t, add)
  for _, host in ipairs(t) do
    add(host, t[host])
  end
end

local function add_delayed(host, delta)
  host_count_add(K_HOSTDELAYED, host, delta)
end

local function counter(field, delta)
  if delta ~= 0 then
    redis.call('HINCRBY', K_META, field, int(delta))
  end
end

-- A named crawl's counts (docs/PROTOCOL.md section 1, `c:<crawl>`): its items ready, delayed,
-- leased and dead, done, its seen URLs and seeded_total, kept by every move of its records (the
-- default crawl's are in `meta`). CRAWL.of: the crawl of a record, nil for the default crawl's
-- (and in a queue without crawls, whose records are not read for it).
function CRAWL.of(rec)
  if rec and CRAWL.on() then
    return (select(8, rec_head(rec)))
  end
end
function CRAWL.count(crawl, field, delta)
  if crawl and delta ~= 0 then
    -- (a foreign value there is passed over, as one in a seen bucket is: which crawls a call
    -- moves items of is only known as it goes, and the move is not left half-done; the crawl's
    -- counts are not kept, and crawl_stats reports the key)
    redis.pcall('HINCRBY', BASE .. ':c:' .. crawl, field, int(delta))
    if field == 'leased' and CRAWL.limited() then
      CRAWL.leased_changed(crawl, delta)
    end
  end
end
-- A named crawl's items done (kind 'd') and seeded (kind 's') in the clock's current minute and
-- the one before, for its rates (crawl_stats): `cr:<crawl>` fields `<kind>:<minute>`, minute
-- being the clock's ms / 60000 rounded down. A minute's first count drops the fields of the
-- minutes before the one before, so the hash holds four fields or fewer (a clock moved back
-- may leave a later minute's until the clock passes it). Written once per call and kind.
function CRAWL.recent(crawl, kind, n)
  if crawl and n > 0 then
    local key = BASE .. ':cr:' .. crawl
    local minute = math.floor(NOW / 60000)
    -- (a foreign value there is passed over: only the crawl's rates are lost)
    if redis.pcall('HINCRBY', key, kind .. ':' .. minute, n) == n then
      local fields = redis.pcall('HKEYS', key)
      if type(fields) == 'table' then
        local old = {}
        for _, field in ipairs(fields) do
          local at = tonumber(string.match(field, '^%a:(%d+)$'))
          if not at or at < minute - 1 then
            old[#old + 1] = field
          end
        end
        if #old > 0 then
          redis.call('HDEL', key, unpack(old))
        end
      end
    end
  end
end

-- The seen and live sets are split in levels of small integer sets (Redis intsets). Level l has
-- 1024 * 8^l buckets and takes new members until meta.seen reaches 384 per bucket on average,
-- which keeps every bucket under the default set-max-intset-entries (512). Earlier levels are
-- only read, so a level never has to be rehashed. Live members are at most as many as seen ones.
-- A shard of a queue of S shards holds about 1/S of its URLs: its levels have 1/S of the
-- buckets (rounded up; `meta.split` = S, fixed by the shard's first write), so a bucket holds
-- as many members as in a one-shard queue and memory per URL does not grow with S.
local SEEN_BASE_BUCKETS, SEEN_GROWTH, SEEN_FILL, SEEN_MAX_LEVEL = 1024, 8, 384, 7

-- The bucket count of each level for this call's split (set by begin, made when it changes).
local LEVEL_SIZE, LEVEL_SPLIT = {}, nil
