-- crawlq script: shard_state_shards
-- protocol: 7
-- flags: no-writes,allow-cross-slot-keys
-- KEYS: the meta key of the first shard to read (see common/1-prelude.lua)
-- ARGV: 1 the first shard's base, 2 call flags and clock, 3... the bases of the other shards
--       to read, all on the node that serves the first
-- reply: one `shard_state` reply per shard, the first shard's first, then in the order given
-- What a sweep of the index reads (docs/PROTOCOL.md section 9, "Index"), for the shards one
-- node serves in one call, as stats_shards reads stats (section 9, "Readings").

return read_bases(shard_state_part, ARGV)
