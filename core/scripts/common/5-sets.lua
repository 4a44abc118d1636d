local function size_levels(split)
  if split ~= LEVEL_SPLIT then
    LEVEL_SPLIT = split
    for l = 0, SEEN_MAX_LEVEL do
      LEVEL_SIZE[l] = math.ceil(SEEN_BASE_BUCKETS * SEEN_GROWTH ^ l / split)
    end
  end
end

-- The split of a shard whose call passed one, read once per call, when the seen or live set
-- is first used (most calls of a one-shard queue never read it: a missing field costs a scan
-- of the meta hash).
local function resolve_split()
  if not SPLIT then
    SPLIT = tonumber(redis.call('HGET', K_META, 'split')) or (STORED_FORMAT and 1) or SPLIT_ASKED
    size_levels(SPLIT)
  end
end

local function level_buckets(level)
  resolve_split()
  return LEVEL_SIZE[level]
end

-- The level new members go to when the queue has seen `seen` items, and the seen count at which
-- the next level starts.
local function current_level(seen)
  resolve_split()
  local level, level_end = 0, level_buckets(0) * SEEN_FILL
  while seen >= level_end and level < SEEN_MAX_LEVEL do
    level = level + 1
    level_end = level_end + level_buckets(level) * SEEN_FILL
  end
  return level, level_end
end

-- The digits of bucket numbers below 2^16 (the first two levels), each made once: in a
-- functions library this table lives as long as the library, so a bucket's digits are formatted
-- once per server instead of once per item (a few µs per seeded URL in all).
local BUCKET_DIGITS = {}
local function bucket_digits(bucket)
  local digits = BUCKET_DIGITS[bucket]
  if not digits then
    digits = int(bucket)
    if bucket < 65536 then
      BUCKET_DIGITS[bucket] = digits
    end
  end
  return digits
end

-- The digits of consecutive whole numbers (a seed's record ids, a lease's tokens) without a
-- string.format for each (about 2.5k instructions): the digits of n / 1000, formatted when they
-- change (`state` keeps them), and the last three digits from ID_SUFFIX, made once each
-- (ID_SUFFIX[k] for k < 1000 is k's digits, for a number below 1000; ID_SUFFIX[1000 + k] the
-- same with leading zeros). Returns the two parts, to be concatenated by the caller with the
-- rest of its string.
local ID_SUFFIX = {}
-- k's digits (0 <= k < 1000), with leading zeros to three when padded
local function three_digits(k, padded)
  local at = padded and k + 1000 or k
  local suffix = ID_SUFFIX[at]
  if not suffix then
    suffix = padded and string.format('%03d', k) or int(k)
    ID_SUFFIX[at] = suffix
  end
  return suffix
end
local function number_digits(state, n)
  local thousands = math.floor(n / 1000)
  local k = n - thousands * 1000
  if k < 0 or k > 999 then
    -- (a quotient rounded up: only for numbers far past any id or token)
    return int(n), ''
  end
  if thousands ~= state[1] then
    state[1], state[2] = thousands, thousands > 0 and int(thousands) or ''
  end
  local suffix = ID_SUFFIX[thousands > 0 and k + 1000 or k]
  return state[2], suffix or three_digits(k, thousands > 0)
end

-- The bucket keys of one level of the seen set (`prefixes` SEEN_PREFIX, kind 's') or of the live
-- set (LIVE_PREFIX, 'v'): a table of bucket number -> key, with the level's prefix and size.
-- In a functions library the table lives with the library, so a bucket's key is built once
-- per server instead of once per item (about 1k instructions each, two per seeded URL). At
-- most KEY_CACHE_MAX keys are kept in all (about 3 MB of the functions' Lua memory: levels 0
-- and 1 of a queue are 18,432 keys); past that, keys are built on every use until a queue not
-- seen yet starts the tables again (begin).
local KEY_CACHE_MAX, key_cache_left = 32768, 32768
local function level_keys(prefixes, kind, level)
  resolve_split()
  local keys = prefixes[level]
  if not keys or keys.size ~= LEVEL_SIZE[level] then
    keys = { prefix = BASE .. ':' .. kind .. ':' .. int(level) .. ':', size = LEVEL_SIZE[level] }
    prefixes[level] = keys
  end
  return keys
end

-- The key of bucket number `bucket` of a level's key table (from level_keys).
local function bucket_key(keys, bucket)
  local key = keys.prefix .. bucket_digits(bucket)
  if key_cache_left > 0 then
    keys[bucket] = key
    key_cache_left = key_cache_left - 1
  end
  return key
end

-- The key of a bucket of the seen set (`prefixes` SEEN_PREFIX, kind 's') or of the live set
-- (LIVE_PREFIX, 'v') at a level. (`%`, a Lua operator, rather than math.fmod, a C function:
-- the same for these non-negative whole numbers.)
local function set_key(prefixes, kind, level, bucket_hash)
  local keys = level_keys(prefixes, kind, level)
  local bucket = bucket_hash % keys.size
  return keys[bucket] or bucket_key(keys, bucket)
end

local function seen_key(level, bucket_hash)
  return set_key(SEEN_PREFIX, 's', level, bucket_hash)
end

local function live_key(level, bucket_hash)
  return set_key(LIVE_PREFIX, 'v', level, bucket_hash)
end

-- Remove a live member (the item was acked, dead-lettered or deleted). It sits at the level
-- that was current when it was added, at most `top_level` (the current one). Given the item's
-- id (a number), the level a seen count equal to it would choose is looked at first when it is
-- below `top_level`: each added item counts at most one seen member, so an item's level is no
-- higher than that, and an item older than the current level costs one SREM where a look from
-- the current level down takes one per level. Not found there (a requeued dead letter, a count
-- changed by hand) or without an id: from `top_level` down.
local function live_remove(member, bucket_hash, top_level, id)
  local tried
  if id and top_level > 0 then
    tried = current_level(id)
    if tried >= top_level then
      tried = nil
    elseif redis.pcall('SREM', live_key(tried, bucket_hash), member) == 1 then
      return
    end
  end
  for l = top_level, 0, -1 do
    -- (a bucket holding a foreign value holds no member: it is passed over, nothing changes)
    if l ~= tried and redis.pcall('SREM', live_key(l, bucket_hash), member) == 1 then
      return
    end
  end
end

local function seen_count()
  return tonumber(META[4] or '0')
end

-- The identity of a stored record (its key, else its URL, else its host key), unescaped, and
-- for a named crawl's item scoped to its crawl (the crawl, a NUL byte, the identity: what its
-- fingerprint and live member are of), then the record's id; nil when the record cannot be
-- read.
local function rec_identity(rec)
  local id, _, host, _, _, pos, _, crawl = rec_head(rec)
  if not id then
    return nil
  end
  local identity = host
  local k = pos - 1
  local _, e, url = string.find(rec, '^,"url":"([^"]*)"', pos)
  if e then
    identity = string.gsub(url, '\\\\', '\\')
    k = e
  end
  -- a key follows the url, or the head fields of a host item; it holds no control
  -- characters, so its only escapes are \" and \\
  if string.sub(rec, k + 1, k + 8) == ',"key":"' then
    k = k + 1
    local after = json_string_end(rec, k + 8)
    if after then
      identity = string.gsub(string.sub(rec, k + 8, after - 2), '\\(.)', '%1')
    end
  end
  if crawl then
    return crawl .. '\0' .. identity, id
  end
  return identity, id
end

-- The live member of a stored record, computed here where no client is involved (reclaim,
-- nack, dead letters): SHA-1 of the item's identity. Member: the first 13 hex digits (52 bits,
-- exact in a Lua number); bucket hash: the next 8.
local function rec_live(rec)
  local identity, id = rec_identity(rec)
  if not identity then
    return nil
  end
  local h = redis.sha1hex(identity)
  return int(tonumber(string.sub(h, 1, 13), 16)), tonumber(string.sub(h, 14, 21), 16), id
end

local function live_remove_rec(rec, top_level)
  local member, bucket, id = rec_live(rec)
  if member then
    live_remove(member, bucket, top_level, tonumber(id))
  end
end

-- Whether an item is queued or leased now: its live member is in some level's live set. nil
-- and the error when a bucket holds a foreign value.
local function is_live(member, bucket_hash, top_level)
  for l = 0, top_level do
    local r = redis.pcall('SISMEMBER', live_key(l, bucket_hash), member)
    if r == 1 then
      return true
    elseif type(r) == 'table' then
      return nil, r
    end
  end
  return false
end

-- Add a stored record's item to the live set; false (nothing added) when it is live already
-- (a forced seed queued it again meanwhile), its record cannot be read or its bucket holds a
-- foreign value.
local function live_add_rec(rec)
  local member, bucket = rec_live(rec)
  if not member then
    return false
  end
  local level = current_level(seen_count())
  if is_live(member, bucket, level) ~= false then
    return false
  end
  return redis.pcall('SADD', live_key(level, bucket), member) == 1
end

