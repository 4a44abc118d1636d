-- crawlq script: ack_seed
-- protocol: 7
-- flags: (none)
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 lease count N, then 4 fields per lease as `ack` takes them, then the
--       revisit as `ack` takes it ('0': none), then the link count M and 9 fields per link as
--       `seed` takes them, then, optionally, the client's cache hits and their seen epoch as
--       `seed` takes them
-- reply: the `seed` reply for the M links, then the N ack flags: {status, added_ready,
--        added_delayed, first_id, seen epoch, flag1, ..., flagN}; flags as `ack` answers them
--        (1 acked, 0 the lease is not live)
-- One call for a worker that answers a page and seeds the links it found: the links are seeded
-- first, exactly as `seed` seeds them (so the frontier never looks finished in between), then
-- the leases are acked exactly as `ack` acks them (seed_part and ack_part are those scripts'
-- bodies). The links are seeded whether or not a lease is still live: a page answered after
-- its lease expired still adds what it found (whoever fetches the page again finds them
-- duplicates). Like `seed`, the call is refused whole while Redis is out of memory.
-- Cache hits judged by a seen epoch that is not the queue's any more refuse the call before it
-- changes anything (CRAWLQ_EPOCH): those links may have left the seen set, and the client sends
-- them with the page (SEED.run).

local n = tonumber(ARGV[3])
local at = 5 + n * 4
-- What the ack reads and the keys it writes, before the seed writes anything (ACK.reads, read
-- once per call; `leased`, the ack's first write, too)
expect_types({ K_LEASED, 'zset' })
ACK.reads(ARGV)
-- (the link count as `seed` takes it: 'M', or 'M/<crawl>' for links of a named crawl)
local links_count = ARGV[at] or '0'
local m = tonumber(links_count) or tonumber(string.match(links_count, '^%d+')) or 0
-- (from index 1, so the link fields live in the table's array part; made by one constructor,
-- which sizes the table once where a loop grows it step by step)
local links
if m * 9 <= 7000 then
  links = { ARGV[1], ARGV[2], links_count, unpack(ARGV, at + 1, at + m * 9 + 2) }
else
  -- (past Lua's unpack limit: a third party's call of more than 250 links)
  links = { ARGV[1], ARGV[2], links_count }
  for i = 1, m * 9 + 2 do
    links[3 + i] = ARGV[at + i]
  end
end
-- (a page's answer: cache hits judged by a moved epoch refuse the call, `seed` in PROTOCOL.md)
links[m * 9 + 6] = true
local seeded = seed_part(links)
if seeded.err then
  -- a foreign value the seed met after it began writing: it took its writes back, and the
  -- call answers its error before the acks (and the lease) change anything
  return seeded
end
local flags = ack_part(ARGV)
local out = { seeded[1], seeded[2], seeded[3], seeded[4], seeded[5] }
for i = 1, n do
  out[5 + i] = flags[i]
end
if REPORT then
  -- on a shard of several, one lower report for both parts: the later epoch, and the earliest
  -- time either made something leasable (-1 from a part that made nothing leasable)
  local seed_at, ack_at = seeded[7], flags[n + 2]
  out[6 + n] = math.max(seeded[6], flags[n + 1])
  out[7 + n] = (seed_at < 0 or (ack_at >= 0 and ack_at < seed_at)) and ack_at or seed_at
end
return out
