-- crawlq script: ack_lease
-- protocol: 7
-- flags: allow-oom
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 lease count N, then 4 fields per lease as `ack` takes them, then the
--       revisit as `ack` takes it ('0': none), then the 8 arguments `lease` takes from its ARGV 3:
--       max items, lease ttl ms, default host delay ms, max attempts, reclaim limit, promote
--       limit, default in-flight limit per host, pacing, then, optionally, the crawls to lease
--       from as `lease` takes them (its ARGV 11)
-- reply: the `lease` reply with the N ack flags after its 4 fixed fields: {now, next_due,
--        reclaimed, reclaimed_dead, N, flag1, ..., flagN, lease_key1, record1, ...}; flags as
--        `ack` answers them (1 acked, 0 the lease is not live)
-- One call for a worker that answers its items and takes the next ones: the acks are applied
-- first, exactly as `ack` applies them (so an expired lease not yet reclaimed still acks), then
-- the lease runs exactly as `lease` (ack_part and lease_part are those scripts' bodies). The
-- keys only the lease writes are checked first, and what the lease reads before it writes is
-- read (FLIGHT.settings), so a foreign value at any of them fails the call before the acks
-- change anything.

local n = tonumber(ARGV[3])
local at = 5 + n * 4
expect_zsets({ K_READY, K_WAIT, K_DELAYED, K_HEADS, K_DEAD })
expect_types({ K_DEADREC, 'hash', K_HOSTDELAY, 'hash' })
-- what the lease reads, before the acks write (FLIGHT.settings, read once per call)
FLIGHT.settings()
local flags = ack_part(ARGV)
local leased = lease_part({ [3] = ARGV[at], [4] = ARGV[at + 1], [5] = ARGV[at + 2],
  [6] = ARGV[at + 3], [7] = ARGV[at + 4], [8] = ARGV[at + 5], [9] = ARGV[at + 6], [10] = ARGV[at + 7],
  [11] = ARGV[at + 8] })
local out = { leased[1], leased[2], leased[3], leased[4], n }
for i = 1, n do
  out[5 + i] = flags[i]
end
for i = 5, #leased do
  out[#out + 1] = leased[i]
end
return out
