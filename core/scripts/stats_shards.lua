-- crawlq script: stats_shards
-- protocol: 7
-- flags: no-writes,allow-cross-slot-keys
-- KEYS: the meta key of the first shard to read (see common/1-prelude.lua)
-- ARGV: 1 the first shard's base, 2 call flags and clock, 3... the bases of the other shards
--       to read, all on the node that serves the first (a standalone Redis serves them all)
-- reply: one `stats` reply per shard, the first shard's first, then in the order of ARGV 3...
-- Several shards of one queue read in one atomic call (docs/PROTOCOL.md section 9, "Readings"):
-- one call per node instead of one per shard, and a reading of all of a node's shards at one
-- moment. Keys of other slots are reached undeclared (the flag allow-cross-slot-keys); in a
-- cluster a shard whose slot is not on this node (moved, migrating) fails the call with a
-- Redis error, and the client reads the shards one by one instead.

return read_bases(stats_part, ARGV)
