-- Removing a set of items in bounded steps (host_delete, crawl_delete): each helper scans one
-- call's worth (`limit` entries from `cursor`) of one place, removes the entries whose record
-- `ours(rec)` claims, passing each to `each(rec, key)` first (the caller forgets its live
-- member and counts it), and returns how many it removed and the next cursor ('0': the scan is
-- over). One table: a script's main chunk may hold at most 200 locals.
local REMOVE = {}

-- Leases (`leases` by HSCAN, and their deadlines in `leased`); `key` is the lease key.
function REMOVE.leases(cursor, limit, ours, each)
  local scan = redis.call('HSCAN', K_LEASES, cursor, 'COUNT', limit)
  local pairs_, gone = scan[2], {}
  for i = 1, #pairs_, 2 do
    if ours(pairs_[i + 1]) then
      gone[#gone + 1] = pairs_[i]
      each(pairs_[i + 1], pairs_[i])
    end
  end
  call_chunked('HDEL', K_LEASES, gone)
  call_chunked('ZREM', K_LEASED, gone)
  return #gone, scan[1]
end

-- A Redis glob (MATCH) that matches `text` itself: its pattern characters escaped.
function REMOVE.glob_literal(text)
  return (string.gsub(text, '[%*%?%[%]\\]', '\\%0'))
end

-- Delayed items (`delayed` by ZSCAN), and their ids from `revisits`; `key` is the id. `match`,
-- when given, is a glob every record of ours matches (Redis's MATCH): the records that do not
-- are passed over in Redis, never made into Lua strings; `ours` still decides for those that do.
function REMOVE.delayed(cursor, limit, ours, each, match)
  local scan = match and redis.call('ZSCAN', K_DELAYED, cursor, 'MATCH', match, 'COUNT', limit)
    or redis.call('ZSCAN', K_DELAYED, cursor, 'COUNT', limit)
  local members, gone, ids = scan[2], {}, {}
  for i = 1, #members, 2 do
    local rec = members[i]
    if ours(rec) then
      gone[#gone + 1] = rec
      ids[#ids + 1] = rec_id(rec)
      each(rec, ids[#ids])
    end
  end
  call_chunked('ZREM', K_DELAYED, gone)
  if #ids > 0 and redis.call('SCARD', K_REVISITS) > 0 then
    call_chunked('SREM', K_REVISITS, ids)
  end
  return #gone, scan[1]
end

-- Dead letters (`dead` by ZSCAN, their records in `deadrec`); `key` is the id.
function REMOVE.dead(cursor, limit, ours, each)
  local scan = redis.call('ZSCAN', K_DEAD, cursor, 'COUNT', limit)
  local ids, gone = {}, {}
  for i = 1, #scan[2], 2 do
    ids[#ids + 1] = scan[2][i]
  end
  if #ids > 0 then
    local recs = call_chunked('HMGET', K_DEADREC, ids)
    for i, id in ipairs(ids) do
      if recs[i] and ours(recs[i]) then
        gone[#gone + 1] = id
        each(recs[i], id)
      end
    end
  end
  call_chunked('ZREM', K_DEAD, gone)
  call_chunked('HDEL', K_DEADREC, gone)
  return #gone, scan[1]
end
