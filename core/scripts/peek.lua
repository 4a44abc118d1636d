-- crawlq script: peek
-- protocol: 7
-- flags: no-writes
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 limit, 4 offset (optional: leasable hosts to skip, 0 when absent),
--       5 host (optional: list that host's ready items instead)
-- reply: {record1, record2, ...}: the head of each leasable host in the order lease would take
--        them (one per host), from the offset-th on, without leasing anything. Read-only:
--        delayed items and held-back hosts that became due are only promoted by lease.
--        With a host: its ready items in the order its leases would take them (best priority
--        first, then oldest), from its offset-th on, whether or not the host is due or paused.

local limit = tonumber(ARGV[3])
local offset = tonumber(ARGV[4] or '0')
local out = {}
if limit <= 0 then
  return out
end
-- A host's ready items in lease order when it may have crawl lanes: the first offset + limit
-- of each lane and each crawl lane, merged as leases take them (the lowest head rank first; of
-- equal ranks a crawl lane's, the crawl lanes in their set's order).
local function host_items_with_crawls(host)
  local wanted = offset + limit
  -- per lane: its records, the rank of each, and a key ordering equal ranks
  local lanes = {}
  for _, member in ipairs(redis.call('ZRANGE', CRAWL.lanes(host), '0', '-1')) do
    local prio = priority_number(string.match(member, '^(%-?%d+):'))
    local recs = redis.call('LRANGE', CRAWL.lane(member, host), '0', int(wanted - 1))
    local ranks = {}
    for i, rec in ipairs(recs) do
      ranks[i] = rank(prio, (CRAWL.tag_ts(rec)))
    end
    lanes[#lanes + 1] = { recs = recs, ranks = ranks, order = '0' .. member, at = 1 }
  end
  for _, prio in ipairs(host_priorities(host)) do
    local recs = redis.call('LRANGE', lane_key(host, prio), '0', int(wanted - 1))
    local ranks = {}
    for i, rec in ipairs(recs) do
      ranks[i] = rank(priority_number(prio), (rec_seq_ts(rec)))
    end
    lanes[#lanes + 1] = { recs = recs, ranks = ranks, order = '1' .. prio, at = 1 }
  end
  for n = 1, wanted do
    local pick
    for _, lane in ipairs(lanes) do
      local r = lane.ranks[lane.at]
      if r and (not pick or r < pick.ranks[pick.at] or (r == pick.ranks[pick.at] and lane.order < pick.order)) then
        pick = lane
      end
    end
    if not pick then
      break
    end
    if n > offset then
      out[#out + 1] = pick.recs[pick.at]
    end
    pick.at = pick.at + 1
  end
  return out
end

if ARGV[5] and CRAWL.on() then
  return host_items_with_crawls(ARGV[5])
end
if ARGV[5] then
  local host = ARGV[5]
  -- a host without a priority set has only its priority-0 lane; a listed priority whose lane
  -- is empty (a lease removes it from the set on its way) is passed over
  local priorities = redis.call('ZRANGE', hp_key(host), '0', '-1')
  if #priorities == 0 then
    priorities = { '0' }
  end
  local skip = offset
  for _, prio in ipairs(priorities) do
    local lane = lane_key(host, prio)
    local len = redis.call('LLEN', lane)
    if skip >= len then
      skip = skip - len
    else
      for _, record in ipairs(redis.call('LRANGE', lane, int(skip), int(skip + limit - #out - 1))) do
        out[#out + 1] = record
      end
      skip = 0
      if #out >= limit then
        break
      end
    end
  end
  return out
end
for _, host in ipairs(redis.call('ZRANGE', K_READY, int(offset), int(offset + limit - 1))) do
  -- (a host without a priority set has only its priority-0 lane)
  local top = redis.call('ZRANGE', hp_key(host), '0', '0')[1] or '0'
  local head = redis.call('LINDEX', lane_key(host, top), '0')
  if CRAWL.on() then
    -- the best crawl lane's head when it ranks first
    local crawl = redis.call('ZRANGE', CRAWL.lanes(host), '0', '0', 'WITHSCORES')
    if crawl[1] and (not head or crawl[2] + 0 <= rank(priority_number(top), (rec_seq_ts(head)))) then
      head = redis.call('LINDEX', CRAWL.lane(crawl[1], host), '0') or head
    end
  end
  if head then
    out[#out + 1] = head
  end
end
return out
