-- crawlq script: queue_remove
-- protocol: 7
-- flags: allow-oom
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 SCAN cursor ('0' to start), 4 SCAN COUNT
-- reply: {next cursor ('0' when the walk is done), keys deleted by this call}
-- One step of removing a base (a queue's own, or one of its shards'): one SCAN step of the node
-- that holds the base, every key it finds matching `<base>:*` unlinked. A client calls again
-- with the cursor until it comes back '0', so no call holds Redis for long however many keys
-- the node has. The base's keys share its slot, so in a cluster they are all on this node.
-- Nothing is kept: items, leases (they answer lost), dead letters, settings, counters, the seen
-- set and meta itself; a client opening the name again makes a new queue, whose seen epoch is
-- a new one, so no known-seen cache answers for the removed seen set.

-- (the base as a SCAN glob: its glob characters matched as themselves)
local pattern = string.gsub(BASE, '[%*%?%[%]\\]', '\\%0') .. ':*'
local step = redis.call('SCAN', ARGV[3], 'MATCH', pattern, 'COUNT', ARGV[4])
local found = step[2]
-- (UNLINK in slices: a SCAN step may find more keys than Lua's unpack takes at once)
for first = 1, #found, 1000 do
  redis.call('UNLINK', unpack(found, first, math.min(first + 999, #found)))
end
return { step[1], #found }
