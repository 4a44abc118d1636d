-- crawlq script: seed
-- protocol: 7
-- flags: (none)
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 item count N (or 'N/<crawl>': every item is of that named crawl, its
--       record tail says so too), then 9 fields per item:
--       fingerprint (signed 64-bit decimal), bucket hash (unsigned 32-bit decimal), host key,
--       priority, delay ms, force (0/1), live member, live bucket hash, record tail (the
--       canonical record after its ts: its host unless the URL spells it, its priority unless
--       0, then its url, key and payload); then, optionally, the client's cache hits: how many
--       of its items the client answered as duplicates without sending them, and the seen epoch
--       it judged them by (as this reply gives it)
-- reply: {status, added_ready, added_delayed, first_id, seen epoch}; status has one byte per
--        item: 'a' added, 'f' added again by force (seen before, and neither queued nor
--        leased now), 'd' duplicate (not added: seen before without force, or queued or leased
--        now), 'b' over its host's budget (not added, not marked seen); added items got the
--        record ids first_id, first_id + 1, ... in the order of the call; the seen epoch
--        (`<meta.born>:<meta.forgotten>`, '' and '0' when absent, then in a functions library
--        `:<sec>.<usec>`, when the server's Lua state began) changes whenever the seen set may
--        have shrunk (a member forgotten, the queue made again under its name, the server
--        restarted or replaced by a replica, which may have lost writes), so a client may cache
--        what the seen set holds for as long as it stays the same
-- Cache hits are counted (seen_cache_hits_total, which stats adds to duplicates_total) only while
-- the seen epoch is still the one they were judged by; otherwise the client sends those items
-- again.
-- A named crawl's items that are ready go into its crawl lanes on their hosts
-- (`lz:<priority>:<crawl>:<host>`), those of a host with consecutive tags from CRAWL.tag's first
-- written into their records, instead of lanes; delayed ones are stored with tag 0 and get
-- their tag when they come due. The queue is marked 7.
-- Budgets: while the queue has a default budget (meta.budget) or any host one (hostbudget),
-- every new URL ('a') counts in hostused[host]; a new URL of a host whose count has reached
-- its budget (its own, else the default) is refused. Forced re-adds ('f') neither count nor
-- are refused. A named crawl with a host budget (`crawlbudget[crawl]`) counts its new URLs per
-- host in `cu:<crawl>` the same way, and a new URL of a host that has added as many to the
-- crawl is refused too (both budgets hold). A named crawl deleted before (its generation in
-- `crawlseed`, above 0) marks its URLs seen under CRAWL.gen_member's members.

-- The seed's steps (scripts.rs, STEPS_END): each call runs the body at the end.
local SEED = {}

-- One call's state, set by SEED.start and shared by the steps (library-level locals: nothing
-- to pass or index on every item). What only rare paths or the call's ends read is kept in
-- SEED's fields instead (a script's main chunk may hold at most 200 locals, core/README.md):
-- SEED.hits and SEED.hits_epoch, the client's cache hits and the seen epoch they were judged
-- by (SEED.answers: whether the call answers pages, `ack_seed` and `ack_seed_lease` setting
-- the slot after the epoch to true, whose hits must hold before anything is acked);
-- SEED.budget, false while no budget applies, else the queue's default budget and per host
-- of this call the URLs it may still add (false: no budget), how many it added and the hosts
-- in first-seen order; SEED.format_before, meta's format before the call (undo puts it back).
local seed_argv, seed_n
-- the seen set's size and level, and the current level's bucket keys (the prelude's level_keys)
local seen, level, level_end, seen_keys, live_keys, level_size
-- the last id given, the call's first, the ids' digits (the prelude's number_digits), and the
-- parts of every record around its id, built once per call
local next_id, first_id, id_digits, rec_open, rec_ts
-- one status byte per item, the call's counts, and the earliest time an item added delayed
-- comes due (reported with the flag 'r')
local status, added_ready, added_delayed, duplicates, seen_added, refused, first_due
-- Lanes pushed to by this call, in first-seen order, as flat arrays (a table per lane costs
-- more than the push when most lanes get one item): index by head member, then host,
-- priority, first record id, and the records (a string while there is one, then a list).
local lane_index, lane_count, lane_host, lane_prio, lane_seq, lane_recs
-- Hosts of those lanes, in first-seen order; best new rank per host (false: none yet); items
-- added per host, and the delayed ones, for the per-host counts (tallies)
local host_rank, host_order, host_count, host_added, host_delayed

-- Set up a call: check the types of the keys every call writes, read meta. Returns meta's
-- born and forgotten (the seen epoch).
function SEED.start(argv)
  seed_argv, seed_n = argv, tonumber(argv[3])
  SEED.crawl = nil
  if not seed_n then
    local n, crawl = string.match(argv[3], '^(%d+)/([^"]+)$')
    if not n then
      fail('INVALID', 'item count ' .. argv[3] .. ' is not N or N/<crawl>')
    end
    seed_n, SEED.crawl = n + 0, crawl
    -- a crawl being deleted (crawl_delete) takes nothing new
    local limits = redis.pcall('HGET', CRAWL.cfg_key(), crawl)
    if type(limits) == 'string' and string.match(limits, ':d$') then
      fail('REFUSED', 'crawl ' .. crawl .. ' is being deleted: nothing can be seeded into it until its deletion ends (one that was stopped ends when the crawl is deleted again)')
    end
    local field = redis.pcall('HGET', CRAWL.seed_key(), crawl)
    if type(field) == 'table' then
      expect_types({ CRAWL.seed_key(), 'hash' })
    end
    -- its counts (CRAWL.count passes over a foreign value there; a seed, which knows its
    -- crawl from the start, is refused whole)
    expect_types({ BASE .. ':c:' .. crawl, 'hash' })
    local gen
    gen, SEED.crawl_budget = CRAWL.seed_config(field)
    SEED.crawl_gen = gen > 0 and gen
    if SEED.crawl_budget then
      expect_types({ CRAWL.used_key(crawl), 'hash' })
    end
  else
    SEED.crawl_budget, SEED.crawl_gen = false, false
  end
  SEED.hits, SEED.hits_epoch = tonumber(argv[4 + seed_n * 9]) or 0, argv[5 + seed_n * 9]
  SEED.answers = argv[6 + seed_n * 9] == true
  seen = seen_count()
  level, level_end = current_level(seen)
  expect_zsets({ K_DELAYED, K_READY, K_WAIT, K_HEADS, K_HOSTITEMS })
  expect_types({ K_WAKE, 'list', K_HOSTDELAYED, 'hash' })
  local ids_digits, default_budget, born, forgotten, layout = unpack(redis.call('HMGET', K_META, 'ids',
    'budget', 'born', 'forgotten', 'layout'))
  next_id = ids_digits and ids_digits + 0 or 0
  SEED.host_budgets = default_budget ~= false or redis.call('HLEN', K_HOSTBUDGET) > 0
  if SEED.host_budgets then
    expect_types({ K_HOSTBUDGET, 'hash', K_HOSTUSED, 'hash' })
  end
  SEED.budget = (SEED.host_budgets or SEED.crawl_budget ~= false)
    and { default = default_budget, left = {}, used = {}, hosts = {} }
  first_id = next_id + 1
  seen_keys, live_keys = level_keys(SEEN_PREFIX, 's', level), level_keys(LIVE_PREFIX, 'v', level)
  level_size = seen_keys.size
  SEED.format_before = STORED_FORMAT
  SEED.reset()
  return born, forgotten, layout
end

-- What a call collects, empty.
function SEED.reset()
  rec_open, rec_ts = '{"v":1,"id":"', '","ts":' .. NOW_DIGITS
  id_digits, status = {}, {}
  added_ready, added_delayed, duplicates, seen_added, refused, first_due = 0, 0, 0, 0, 0, -1
  lane_index, lane_count, lane_host, lane_prio, lane_seq, lane_recs = {}, 0, {}, {}, {}, {}
  host_rank, host_order, host_count, host_added, host_delayed = {}, {}, 0, {}, {}
  -- a crawl's ready items per host for its crawl lanes (priority digits, the record's two parts
  -- around its tag, ...), and the hosts in first-seen order (SEED.crawl_item)
  SEED.zrecs, SEED.zhosts = {}, {}
end

-- A ready item of the call's crawl, kept for its crawl lane on its host: its record as the two
-- parts around its tag (the record tail holds a NUL byte where the tag goes), written by
-- SEED.push_crawl once the host's tags are known.
function SEED.crawl_item(host, rec, prio_digits)
  local recs = SEED.zrecs[host]
  if not recs then
    recs = {}
    SEED.zrecs[host] = recs
    SEED.zhosts[#SEED.zhosts + 1] = host
  end
  local cut = string.find(rec, '\0', 1, true)
  if not cut then
    fail('INVALID', 'a record tail of a named crawl without the place of its tag')
  end
  recs[#recs + 1], recs[#recs + 2], recs[#recs + 3] = prio_digits, string.sub(rec, 1, cut - 1),
    string.sub(rec, cut + 1)
end

-- A delayed item of the call's crawl as it waits in `delayed`: with tag 0 where its tail holds
-- the NUL byte (CRAWL.enqueue gives it its tag when it comes due).
function SEED.untagged(rec)
  local cut = string.find(rec, '\0', 1, true)
  return cut and string.sub(rec, 1, cut - 1) .. '0' .. string.sub(rec, cut + 1) or rec
end

-- The crawl's ready items into its lanes on their hosts (one RPUSH per lane, in chunks), each
-- host's with consecutive tags in the call's order (CRAWL.tag). A lane that was empty is listed
-- in the host's crawl lanes at its head's rank, with its age in `heads`. Every key is read
-- before the first write: a foreign value at one fails the call with nothing changed. Returns
-- the error reply to send, if any; fills host_was_empty for a host whose lanes were all empty,
-- and lists each host with its best new rank for SEED.schedule.
function SEED.push_crawl(host_was_empty)
  local crawl, lengths, others, tags = SEED.crawl, {}, {}, {}
  for _, host in ipairs(SEED.zhosts) do
    local recs, listed = SEED.zrecs[host], CRAWL.lanes(host)
    local foreign, any_empty, all_empty = nil, false, true
    for i = 1, #recs, 3 do
      local lane = CRAWL.lane(CRAWL.member(recs[i], crawl), host)
      if lengths[lane] == nil then
        local len = redis.pcall('LLEN', lane)
        lengths[lane] = len
        foreign = foreign or type(len) == 'table' and lane
        any_empty, all_empty = any_empty or len == 0, all_empty and len == 0
      end
    end
    -- the host's crawl lanes are written (and so read first) only for a new lane; whether
    -- the host had ready items only matters when every lane of the call is new
    others[host] = any_empty and redis.pcall('ZCARD', listed) or 1
    if not all_empty and type(others[host]) ~= 'table' then
      others[host] = 1
    end
    -- (the host's tags, read once: CRAWL.tag)
    tags[host] = redis.pcall('HMGET', CRAWL.tags(host), '*', crawl)
    foreign = foreign or type(others[host]) == 'table' and listed
      or tags[host].err and CRAWL.tags(host)
    if foreign then
      SEED.undo_items(seed_n)
      return redis.error_reply('CRAWLQ_CORRUPT key ' .. foreign .. ' holds a '
        .. redis.call('TYPE', foreign).ok .. ', expected a '
        .. (foreign == CRAWL.tags(host) and 'hash' or foreign == listed and 'zset' or 'list'))
    end
  end
  own_format(PROTOCOL_DIGITS)
  local made = CRAWL.new_lanes()
  for _, host in ipairs(SEED.zhosts) do
    SEED.push_crawl_host(host, lengths, others[host], tags[host], host_was_empty, made)
  end
  CRAWL.lanes_made(crawl, made, others)
end

-- One host's part of SEED.push_crawl: its records tagged and pushed lane by lane.
function SEED.push_crawl_host(host, lengths, others, known_tags, host_was_empty, made)
  local crawl, recs = SEED.crawl, SEED.zrecs[host]
  local unit, w = CRAWL.tag(crawl, host, #recs / 3, false, known_tags)
  local best
  unit = unit - 1
  -- the records of each lane, lanes in first-seen order
  local by_lane, lanes = {}, {}
  for i = 1, #recs, 3 do
    unit = unit + 1
    local tag = w == 1 and unit or math.floor(unit / w)
    local prio = recs[i]
    local lane_recs = by_lane[prio]
    if not lane_recs then
      lane_recs = { first = tag }
      by_lane[prio] = lane_recs
      lanes[#lanes + 1] = prio
    end
    lane_recs[#lane_recs + 1] = recs[i + 1] .. int(tag) .. recs[i + 2]
  end
  for _, prio in ipairs(lanes) do
    local member = CRAWL.member(prio, crawl)
    local lane = CRAWL.lane(member, host)
    local lane_recs = by_lane[prio]
    for first = 1, #lane_recs, 4000 do
      redis.call('RPUSH', lane, unpack(lane_recs, first, math.min(first + 3999, #lane_recs)))
    end
    if lengths[lane] == 0 then
      -- a new lane: its head is the first of these
      local r = rank(priority_number(prio), lane_recs.first)
      CRAWL.lane_made(made, member, host, redis.call('ZADD', CRAWL.lanes(host), int(r), member))
      lengths[lane] = #lane_recs
      best = CRAWL.better(best, r)
    end
  end
  if host_rank[host] == nil then
    host_count = host_count + 1
    host_order[host_count] = host
  end
  host_rank[host] = CRAWL.better(host_rank[host] or nil, best)
  if host_was_empty[host] == nil then
    host_was_empty[host] = others == 0
      and redis.call('EXISTS', hp_key(host), lane_key(host, 0)) == 0
  end
end

-- URLs a host may still add under its budget and the call's crawl's host budget, the smaller
-- (false: it has neither); read once per host and call.
function SEED.left_for(host)
  local budget = SEED.budget
  local left = budget.left[host]
  if left == nil then
    local limit = SEED.host_budgets and (redis.call('HGET', K_HOSTBUDGET, host) or budget.default)
    left = false
    if limit then
      left = math.max(tonumber(limit) - tonumber(redis.call('HGET', K_HOSTUSED, host) or '0'), 0)
    end
    if SEED.crawl_budget then
      local crawl_left = math.max(SEED.crawl_budget
        - tonumber(redis.call('HGET', CRAWL.used_key(SEED.crawl), host) or '0'), 0)
      left = left and math.min(left, crawl_left) or crawl_left
    end
    budget.left[host] = left
    budget.used[host] = 0
    budget.hosts[#budget.hosts + 1] = host
  end
  return left
end

-- A bucket or a lane that holds a foreign value (another program wrote it) is only found when
-- the item that uses it comes: the call then takes back what it wrote (the items before item
-- `upto`, 0-based) and fails whole, with nothing changed.
function SEED.undo_items(upto)
  if STORED_FORMAT ~= SEED.format_before then
    -- (a new lane of a new queue marks it; taken back too)
    if SEED.format_before then
      redis.call('HSET', K_META, 'format', SEED.format_before)
    else
      redis.call('HDEL', K_META, 'format', 'split')
    end
  end
  local argv, id = seed_argv, first_id
  for i = 0, upto - 1 do
    local a = 4 + i * 9
    local st = status[i + 1]
    if st == 'a' then
      local fp = SEED.crawl_gen and CRAWL.gen_member(argv[a], SEED.crawl_gen) or argv[a]
      for l = level, 0, -1 do
        if redis.pcall('SREM', seen_key(l, argv[a + 1] + 0), fp) == 1 then
          break
        end
      end
    end
    if st == 'a' or st == 'f' then
      live_remove(argv[a + 6], argv[a + 7] + 0, level)
      if argv[a + 4] ~= '0' and argv[a + 4] + 0 > 0 then
        local rec = rec_open .. int(id) .. rec_ts .. argv[a + 8]
        redis.call('ZREM', K_DELAYED, SEED.crawl and SEED.untagged(rec) or rec)
      end
      id = id + 1
    end
  end
end

function SEED.refuse(upto, key, expected)
  SEED.undo_items(upto)
  return redis.error_reply('CRAWLQ_CORRUPT key ' .. key .. ' holds a ' .. redis.call('TYPE', key).ok
    .. ', expected a ' .. expected)
end

-- Item i's live set is foreign: taken back with the items before it (and its own seen member,
-- unless it was seen before and added by force).
function SEED.refuse_live(i, dup, key)
  status[i + 1] = dup and 'd' or 'a'
  return SEED.refuse(dup and i or i + 1, key, 'set')
end

-- A new URL, the seen set's `seen_now`-th member: the set's next level begins when the current
-- one is full, and a host under a budget may add one less.
function SEED.count_new(host, seen_now)
  if seen_now >= level_end and level < SEEN_MAX_LEVEL then
    level = level + 1
    level_end = level_end + level_buckets(level) * SEEN_FILL
    seen_keys, live_keys = level_keys(SEEN_PREFIX, 's', level), level_keys(LIVE_PREFIX, 'v', level)
    level_size = seen_keys.size
  end
  local budget = SEED.budget
  if budget then
    budget.used[host] = budget.used[host] + 1
    if budget.left[host] then
      budget.left[host] = budget.left[host] - 1
    end
  end
end

-- An added item that comes due later: into `delayed` (its record `rec`), not a lane.
function SEED.delay(host, rec, delay_digits)
  local due = NOW + delay_digits
  if first_due < 0 or due < first_due then
    first_due = due
  end
  redis.call('ZADD', K_DELAYED, int(due), rec)
  added_delayed = added_delayed + 1
  tally(host_delayed, host, 1)
end

-- Take back the first `upto` lanes' pushes and listings (per new lane: how its host's priority
-- set listed it), then every item.
function SEED.undo_lanes(upto, listings)
  for lj = 1, upto do
    local recs = lane_recs[lj]
    local key = lane_key(lane_host[lj], lane_prio[lj])
    local pushed = type(recs) == 'string' and 1 or #recs
    local len = redis.call('LLEN', key)
    if len <= pushed then
      redis.call('UNLINK', key)
    else
      redis.call('LTRIM', key, '0', int(len - pushed - 1))
    end
    local listing = listings[lj]
    if listing == 'set' then
      redis.call('UNLINK', hp_key(lane_host[lj]))
    elseif listing then
      redis.call('ZREM', hp_key(lane_host[lj]), listing)
    end
  end
  SEED.undo_items(seed_n)
end

-- One RPUSH per lane (in chunks that stay under Lua's unpack limit) instead of one per URL.
-- New items arrive with higher sequence numbers than anything queued, so only a new lane can
-- change its host's best head: existing lanes of a scheduled host need nothing but the push.
-- Only a new lane can mean a new host, so the host's priorities are only looked at then.
-- Returns the error reply to send, or nil and whether each host with a new lane had none before.
function SEED.push_lanes()
  local host_was_empty = {}
  local lane_prefix_0 = BASE .. ':l:0:'
  -- the new lanes' head ages, written with one ZADD
  local new_heads = {}
  -- per new lane: how its host's priority set listed it (what undo takes back)
  local listings = {}
  for li = 1, lane_count do
    local host, prio, recs = lane_host[li], lane_prio[li], lane_recs[li]
    local key = prio == 0 and lane_prefix_0 .. host or lane_key(host, prio)
    local len, pushed
    if type(recs) == 'string' then
      len, pushed = redis.pcall('RPUSH', key, recs), 1
    else
      len = redis.pcall('RPUSH', key, unpack(recs, 1, math.min(4000, #recs)))
      if type(len) ~= 'table' then
        for first = 4001, #recs, 4000 do
          len = redis.call('RPUSH', key, unpack(recs, first, math.min(first + 3999, #recs)))
        end
      end
      pushed = #recs
    end
    if type(len) == 'table' then
      SEED.undo_lanes(li - 1, listings)
      return redis.error_reply('CRAWLQ_CORRUPT key ' .. key .. ' holds a '
        .. redis.call('TYPE', key).ok .. ', expected a list')
    end
    if len == pushed then
      -- a new lane: listed in its host's priorities, its head's age in heads
      local was_empty, listing = host_lane_added(host, prio)
      if was_empty == nil then
        SEED.undo_lanes(li, listings)
        return redis.error_reply('CRAWLQ_CORRUPT key ' .. hp_key(host) .. ' holds a '
          .. redis.call('TYPE', hp_key(host)).ok .. ', expected a zset')
      end
      listings[li] = listing
      if host_was_empty[host] == nil then
        host_was_empty[host] = was_empty
      end
      new_heads[#new_heads + 1] = NOW_DIGITS
      new_heads[#new_heads + 1] = head_member(host, prio)
      local r = rank(prio, lane_seq[li])
      local best = host_rank[host]
      if not best or r < best then
        host_rank[host] = r
      end
    end
  end
  call_chunked('ZADD', K_HEADS, new_heads)
  return nil, host_was_empty
end

-- Hosts with a new lane go to `ready` at their best head's rank (never raising a rank they
-- have there) unless politeness holds them in `wait`: one read of `wait` and one ZADD for all.
-- Returns how many of them had no ready item before.
function SEED.schedule(host_was_empty)
  local new_hosts, scheduled = 0, {}
  for i = 1, host_count do
    local host = host_order[i]
    if host_rank[host] then
      scheduled[#scheduled + 1] = host
      if host_was_empty[host] then
        new_hosts = new_hosts + 1
      end
    end
  end
  local held = call_chunked('ZMSCORE', K_WAIT, scheduled)
  local ranks = {}
  for i, host in ipairs(scheduled) do
    if not held[i] then
      ranks[#ranks + 1] = int(host_rank[host])
      ranks[#ranks + 1] = host
    else
      CRAWL.queued_on_held(host, held[i])
    end
  end
  for first = 1, #ranks, 4000 do
    redis.call('ZADD', K_READY, 'LT', unpack(ranks, first, math.min(first + 3999, #ranks)))
  end
  return new_hosts
end

-- The call's counts and ids into meta and the counters; the reply.
function SEED.finish(born, forgotten, new_hosts, layout)
  local added = added_ready + added_delayed
  if SEED.hits > 0 and SEED.hits_epoch == SEED.epoch(born, forgotten) then
    counter('seen_cache_hits_total', SEED.hits)
  end
  own_format(SEED.crawl and added > 0 and PROTOCOL_DIGITS or nil)
  if added > 0 then
    local fields = { 'ids', int(next_id) }
    if not born then
      -- the seen set's first member: its epoch starts here, by the server's clock even when the
      -- call pins one (a queue removed and made again gets a new one)
      local t = redis.call('TIME')
      born = t[1] .. three_digits(math.floor(t[2] / 1000), true) .. three_digits(t[2] % 1000, true)
      fields[3], fields[4] = 'born', born
    end
    if not layout then
      -- a value longer than hash-max-listpack-value (64 bytes) turns meta into a hash table for
      -- good: every call reads and counts in meta, and a listpack is read by a scan of its
      -- fields (docs/PROTOCOL.md, section 1)
      fields[#fields + 1], fields[#fields + 2] = 'layout', META_LAYOUT
    end
    redis.call('HSET', K_META, unpack(fields))
  end
  counter('seen', seen_added)
  counter('ready', added_ready)
  if SEED.crawl then
    CRAWL.count(SEED.crawl, 'ready', added_ready)
    CRAWL.count(SEED.crawl, 'delayed', added_delayed)
    CRAWL.count(SEED.crawl, 'seen', seen_added)
    CRAWL.count(SEED.crawl, 'seeded_total', added)
    CRAWL.recent(SEED.crawl, 's', added)
    if added > 0 then
      -- (crawls_list; a foreign value there only loses the listing)
      redis.pcall('SADD', BASE .. ':crawls', SEED.crawl)
    end
  end
  counter('hosts', new_hosts)
  counter('seeded_total', added)
  counter('duplicates_total', duplicates)
  counter('over_budget_total', refused)
  tally_flush(host_added, host_items_add)
  tally_flush(host_delayed, add_delayed)
  local budget = SEED.budget
  if budget then
    for _, host in ipairs(budget.hosts) do
      local used = budget.used[host]
      if used > 0 then
        if SEED.host_budgets then
          redis.call('HINCRBY', K_HOSTUSED, host, used)
        end
        if SEED.crawl_budget then
          redis.call('HINCRBY', CRAWL.used_key(SEED.crawl), host, used)
        end
      end
    end
  end
  wake(added_ready)
  return reported({ table.concat(status), added_ready, added_delayed, first_id,
    SEED.epoch(born, forgotten) },
    added_ready > 0 and NOW or first_due)
end

-- Every item of the call: 'a' added, 'f' added again by force, 'd' duplicate or 'b' over its
-- host's budget (new, but not marked seen, so it can come in once the budget grows). A queued
-- item goes into its live set, then `delayed` or its lane (pushed after the loop,
-- SEED.push_lanes). Returns the error reply to send, if any. The state every item uses is held
-- in this step's locals and stored back at the end: a step's upvalue costs an instruction more
-- on each use, which on every item of a large seed is measurable (bench/README.md).
function SEED.items()
  local argv, status, budgets, lane_index, lane_recs = seed_argv, status, SEED.budget, lane_index,
    lane_recs
  local host_rank, lanes, hosts = host_rank, lane_count, host_count
  local seen_now, id, ready, dups, over_n = seen, next_id, added_ready, duplicates, refused
  local gen = SEED.crawl_gen
  for i = 0, seed_n - 1 do
    local a = 4 + i * 9
    local fp, bucket_hash, host = argv[a], argv[a + 1] + 0, argv[a + 2]
    if gen then
      fp = CRAWL.gen_member(fp, gen)
    end
    local dup, over = false, false
    for l = 0, level - 1 do
      local key = seen_key(l, bucket_hash)
      local r = redis.pcall('SISMEMBER', key, fp)
      if r == 1 then
        dup = true
        break
      elseif type(r) == 'table' then
        return SEED.refuse(i, key, 'set')
      end
    end
    if not dup then
      local bucket = bucket_hash % level_size
      local key = seen_keys[bucket] or bucket_key(seen_keys, bucket)
      -- (past its host's budget, a new item is only looked up: not marked seen)
      local over_budget = budgets and SEED.left_for(host) == 0
      local r = redis.pcall(over_budget and 'SISMEMBER' or 'SADD', key, fp)
      if type(r) == 'table' then
        return SEED.refuse(i, key, 'set')
      end
      -- (for a member the set had, SADD answers 0 and SISMEMBER 1)
      dup, over = r == (over_budget and 1 or 0), over_budget and r ~= 1
    end
    local force = argv[a + 5] == '1'
    local live_now = dup and force and is_live(argv[a + 6], argv[a + 7] + 0, level)
    if live_now == nil then
      return SEED.refuse(i, live_key(level, argv[a + 7] + 0), 'set')
    end
    if over then
      status[i + 1], over_n = 'b', over_n + 1
    elseif dup and (not force or live_now) then
      status[i + 1], dups = 'd', dups + 1
    else
      if not dup then
        seen_now = seen_now + 1
        if budgets or (seen_now >= level_end and level < SEEN_MAX_LEVEL) then
          SEED.count_new(host, seen_now)
        end
      end
      local live_bucket = (argv[a + 7] + 0) % level_size
      local live_bucket_key = live_keys[live_bucket] or bucket_key(live_keys, live_bucket)
      if type(redis.pcall('SADD', live_bucket_key, argv[a + 6])) == 'table' then
        return SEED.refuse_live(i, dup, live_bucket_key)
      end
      status[i + 1], id = dup and 'f' or 'a', id + 1
      local id_prefix, id_suffix = number_digits(id_digits, id)
      local rec, prio_digits = rec_open .. id_prefix .. id_suffix .. rec_ts .. argv[a + 8], argv[a + 3]
      tally(host_added, host, 1)
      if argv[a + 4] ~= '0' and argv[a + 4] + 0 > 0 then
        SEED.delay(host, SEED.crawl and SEED.untagged(rec) or rec, argv[a + 4])
      elseif SEED.crawl then
        SEED.crawl_item(host, rec, prio_digits)
        ready = ready + 1
      else
        local member = prio_digits == '0' and host or prio_digits .. ':' .. host
        local li = lane_index[member]
        local recs = li and lane_recs[li]
        if not li then
          -- a lane this call pushes to for the first time, and its host if new to the call too
          lanes = lanes + 1
          lane_index[member], lane_host[lanes], lane_seq[lanes], lane_recs[lanes] = lanes, host, id, rec
          lane_prio[lanes] = prio_digits == '0' and 0 or prio_digits + 0
          if host_rank[host] == nil then
            host_rank[host], hosts = false, hosts + 1
            host_order[hosts] = host
          end
        elseif type(recs) == 'string' then
          lane_recs[li] = { recs, rec }
        else
          recs[#recs + 1] = rec
        end
        ready = ready + 1
      end
    end
  end
  seen_added, seen, next_id = seen_now - seen, seen_now, id
  added_ready, duplicates, refused, lane_count, host_count = ready, dups, over_n, lanes, hosts
end

-- The seen epoch: meta's born and forgotten ('' and '0' when absent), then this server's Lua
-- state (LUA_STATE: '' with EVAL).
function SEED.epoch(born, forgotten)
  return (born or '') .. ':' .. (forgotten or '0') .. LUA_STATE
end

-- The whole call: its items, then the lanes, the hosts and the counts. Returns the reply.
function SEED.run(born, forgotten, layout)
  if SEED.answers and SEED.hits > 0 and SEED.hits_epoch ~= SEED.epoch(born, forgotten) then
    -- Links a client's cache held back by an epoch that has moved may have left the seen set
    -- (a restart that lost writes). A page's answer is refused before it changes anything, so
    -- that the client sends them with the page: acked first, they would be lost if the call
    -- sending them after the ack failed.
    return redis.error_reply('CRAWLQ_EPOCH ' .. SEED.epoch(born, forgotten) .. ' is the seen '
      .. 'epoch now, not ' .. SEED.hits_epoch .. ': send the links the cache held back too')
  end
  local err = SEED.items()
  if err then
    return err
  end
  local host_was_empty
  err, host_was_empty = SEED.push_lanes()
  if err then
    return err
  end
  if #SEED.zhosts > 0 then
    err = SEED.push_crawl(host_was_empty)
    if err then
      return err
    end
  end
  return SEED.finish(born, forgotten, SEED.schedule(host_was_empty), layout)
end

-- In a functions library the call's state outlives it: what holds the call's arguments and
-- records is let go, so Lua's memory does not keep the largest seed until the next one.
function SEED.forget()
  seed_argv, status, id_digits = nil, nil, nil
  SEED.budget = nil
  lane_index, lane_host, lane_prio, lane_seq, lane_recs = nil, nil, nil, nil, nil
  host_rank, host_order, host_added, host_delayed = nil, nil, nil, nil
  SEED.zrecs, SEED.zhosts = nil, nil
end

--- per call ---
local reply = SEED.run(SEED.start(ARGV))
SEED.forget()
return reply
