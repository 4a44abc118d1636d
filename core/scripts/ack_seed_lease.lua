-- crawlq script: ack_seed_lease
-- protocol: 7
-- flags: (none)
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 lease count N, then 4 fields per lease as `ack` takes them, then the
--       revisit as `ack` takes it ('0': none), then the link count M and 9 fields per link as
--       `seed` takes them, then the 8 arguments `lease` takes from its ARGV 3: max items, lease
--       ttl ms, default host delay ms, max attempts, reclaim limit, promote limit, default
--       in-flight limit per host, pacing; then, optionally, the client's cache hits and their
--       seen epoch as `seed` takes them ('0' and '' for none), and the crawls to lease from as
--       `lease` takes them (its ARGV 11)
-- reply: the `seed` reply for the M links, the N ack flags, then the `lease` reply: {status,
--        added_ready, added_delayed, first_id, seen epoch, N, flag1, ..., flagN, now, next_due,
--        reclaimed, reclaimed_dead, lease_key1, record1, ...}
-- One call per fetched page for a worker: the links it found are seeded exactly as `seed`
-- seeds them, its lease is acked exactly as `ack` acks it, then the next items are leased
-- exactly as `lease` leases them (seed_part, ack_part and lease_part are those scripts'
-- bodies). The keys the lease and the ack write are checked first, and what they read before
-- they write is read (ACK.reads, FLIGHT.settings), so a foreign value at any of them fails the
-- call before anything changes. As with `ack_seed`, the links are seeded
-- whether or not the lease is still live, and the call is refused whole while Redis is out of
-- memory.
-- Cache hits judged by a seen epoch that is not the queue's any more refuse the call before it
-- changes anything (CRAWLQ_EPOCH): those links may have left the seen set, and the client sends
-- them with the page (SEED.run).

local n = tonumber(ARGV[3])
local at = 5 + n * 4
-- (the link count as `seed` takes it: 'M', or 'M/<crawl>' for links of a named crawl)
local links_count = ARGV[at] or '0'
local m = tonumber(links_count) or tonumber(string.match(links_count, '^%d+')) or 0
local from = at + m * 9 + 1
-- (with `leased`, which the acks write first)
expect_zsets({ K_READY, K_WAIT, K_DELAYED, K_HEADS, K_DEAD, K_LEASED })
expect_types({ K_DEADREC, 'hash', K_HOSTDELAY, 'hash' })
-- what the ack and the lease read and the keys the ack writes, before the seed writes
-- (ACK.reads, FLIGHT.settings)
ACK.reads(ARGV)
FLIGHT.settings()
-- (from index 1, so the link fields live in the table's array part; made by one constructor,
-- which sizes the table once where a loop grows it step by step: its last two slots, taken
-- from the lease's arguments, are then set to the cache hits and their epoch)
local links
if m * 9 <= 7000 then
  links = { ARGV[1], ARGV[2], links_count, unpack(ARGV, at + 1, at + m * 9 + 2) }
else
  -- (past Lua's unpack limit: a third party's call of more than 250 links)
  links = { ARGV[1], ARGV[2], links_count }
  for i = 1, m * 9 do
    links[3 + i] = ARGV[at + i]
  end
end
links[4 + m * 9], links[5 + m * 9] = ARGV[from + 8], ARGV[from + 9]
-- (a page's answer: cache hits judged by a moved epoch refuse the call, `seed` in PROTOCOL.md)
links[6 + m * 9] = true
local seeded = seed_part(links)
if seeded.err then
  -- a foreign value the seed met after it began writing: it took its writes back, and the
  -- call answers its error before the acks (and the lease) change anything
  return seeded
end
local flags = ack_part(ARGV)
local leased = lease_part({ [3] = ARGV[from], [4] = ARGV[from + 1], [5] = ARGV[from + 2],
  [6] = ARGV[from + 3], [7] = ARGV[from + 4], [8] = ARGV[from + 5], [9] = ARGV[from + 6],
  [10] = ARGV[from + 7], [11] = ARGV[from + 10] })
local out = { seeded[1], seeded[2], seeded[3], seeded[4], seeded[5], n }
for i = 1, n do
  out[6 + i] = flags[i]
end
for i = 1, #leased do
  out[#out + 1] = leased[i]
end
return out
