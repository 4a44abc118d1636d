-- The id in a lease key '<token>:<id>'.
local function lease_key_id(lease_key)
  local _, _, id = string.find(lease_key, '^%d+:(.*)$')
  return id or '?'
end

-- Take back expired leases (their keys, read by the caller from `leased`). Each goes back to
-- the end of its lane, or to dead letters once max_attempts is reached (or when its record
-- cannot be read). Range removals and chunked multi-member calls keep any number of them under
-- Lua's unpack limit. Returns requeued, died. The caller has checked the types of the keys
-- it writes besides `leased` and `leases`: dead, deadrec, ready, wait and heads.
local function reclaim_leases(lease_keys, max_attempts)
  if #lease_keys == 0 then
    return 0, 0
  end
  local recs = call_chunked('HMGET', K_LEASES, lease_keys)
  local flights = FLIGHT.any()
  redis.call('ZREMRANGEBYRANK', K_LEASED, '0', int(#lease_keys - 1))
  call_chunked('HDEL', K_LEASES, lease_keys)
  local requeued, died = 0, 0
  local level
  for i, lease_key in ipairs(lease_keys) do
    local rec = recs[i]
    if rec then
      local _, _, host, _, attempt, _, _, crawl = rec_head(rec)
      CRAWL.count(crawl, 'leased', -1)
      if flights and host then
        FLIGHT.answered(host, 1, lease_key)
      end
      local fresh = attempt and rec_rebuild(rec, NOW, attempt + 1, '"lease expired"')
      if fresh and attempt + 1 < max_attempts and enqueue_ready(fresh, false) then
        requeued = requeued + 1
      else
        level = level or current_level(seen_count())
        live_remove_rec(rec, level)
        to_dead(lease_key_id(lease_key), fresh or rec)
        died = died + 1
      end
    end
  end
  counter('reclaimed_total', #lease_keys)
  return requeued, died
end

-- What a lease call does before it leases (each part only when it has something to do): the
-- due hosts in `due_hosts` (the first of `wait`) become leasable, their timed pauses forgotten
-- (any_paused), a host whose priority set or lane holds a foreign value held instead; the
-- expired leases in `expired` are taken back (reclaim_leases); the due delayed records in
-- `due_items` (the first of `delayed`) join their lanes, a record that cannot be queued (one no
-- script can read, or whose lane holds a foreign value) going to dead letters. any_revisits: some
-- records are scheduled revisits (their ids leave `revisits`). Returns requeued and dead-lettered
-- expired leases. The caller has checked the types of the keys this writes.
local function promote_due(expired, due_items, due_hosts, max_attempts, any_paused, any_revisits)
  -- the due hosts first, while they are still the first of `wait`: a reclaim may hold one of
  -- them again (its delay after the answer), moving it behind hosts not due yet
  if #due_hosts > 0 then
    redis.call('ZREMRANGEBYRANK', K_WAIT, '0', int(#due_hosts - 1))
    if any_paused then
      call_chunked('HDEL', K_HOSTPAUSE, due_hosts)
    end
    for _, host in ipairs(due_hosts) do
      ready_at_rank(host)
    end
  end
  local reclaimed, reclaimed_dead = reclaim_leases(expired, max_attempts)
  if #due_items > 0 then
    redis.call('ZREMRANGEBYRANK', K_DELAYED, '0', int(#due_items - 1))
    if any_revisits then
      local ids = {}
      for i, rec in ipairs(due_items) do
        ids[i] = rec_id(rec)
      end
      call_chunked('SREM', K_REVISITS, ids)
    end
    local level
    local promoted = {}
    for _, rec in ipairs(due_items) do
      CRAWL.count(CRAWL.of(rec), 'delayed', -1)
      local host = enqueue_ready(rec, false)
      if host then
        tally(promoted, host, -1)
      else
        local _, _, readable_host = rec_head(rec)
        if readable_host then
          tally(promoted, readable_host, -1)
        end
        level = level or current_level(seen_count())
        live_remove_rec(rec, level)
        to_dead(rec_id(rec), rec)
      end
    end
    tally_flush(promoted, add_delayed)
  end
  return reclaimed, reclaimed_dead
end

-- The earliest score of a time-ordered set, or nil when it is empty.
local function earliest_score(key)
  local first = redis.call('ZRANGE', key, '0', '0', 'WITHSCORES')
  return first[2] and first[2] + 0
end

-- Whether a time (ms, or nil for none) has come.
local function due_at(at)
  return at and at <= NOW
end

-- The earliest of the earliest scores of `leased`, `delayed` and `wait` (each nil when its set
-- is empty): the time (ms) at which an expiring lease, a delayed item or a held-back host can
-- change what is leasable, or -1. A host paused until resumed never comes due.
local function earliest_due(lease_at, item_at, host_at)
  local due = -1
  for _, at in ipairs({ lease_at or -1, item_at or -1, host_at or -1 }) do
    if at >= 0 and at < PAUSED_FOREVER and (due < 0 or at < due) then
      due = at
    end
  end
  return due
end

-- The same, read now.
local function next_due()
  return earliest_due(earliest_score(K_LEASED), earliest_score(K_DELAYED), earliest_score(K_WAIT))
end

