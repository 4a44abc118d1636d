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
-- of each lane and each crawl lane, merged by rank.
local function host_items_with_crawls(host)
  local wanted = offset + limit
  local ranked = {}
  for _, prio in ipairs(host_priorities(host)) do
    for _, rec in ipairs(redis.call('LRANGE', lane_key(host, prio), '0', int(wanted - 1))) do
      ranked[#ranked + 1] = { rank(priority_number(prio), (rec_seq_ts(rec))), 1, rec }
    end
  end
  for _, crawl in ipairs(redis.call('ZRANGE', CRAWL.lanes(host), '0', '-1')) do
    local recs = redis.call('ZRANGE', CRAWL.lane(crawl, host), '0', int(wanted - 1), 'WITHSCORES')
    for i = 1, #recs, 2 do
      ranked[#ranked + 1] = { recs[i + 1] + 0, 0, recs[i] }
    end
  end
  -- (of equal ranks the crawl lane's comes first, and its own in the set's order, as a lease
  -- takes them)
  table.sort(ranked, function(a, b)
    if a[1] ~= b[1] then
      return a[1] < b[1]
    elseif a[2] ~= b[2] then
      return a[2] < b[2]
    end
    return a[3] < b[3]
  end)
  for i = offset + 1, math.min(wanted, #ranked) do
    out[#out + 1] = ranked[i][3]
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
      head = redis.call('ZRANGE', CRAWL.lane(crawl[1], host), '0', '0')[1] or head
    end
  end
  if head then
    out[#out + 1] = head
  end
end
return out
