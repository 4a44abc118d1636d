-- crawlq script: hosts_list_shards
-- protocol: 7
-- flags: no-writes,allow-cross-slot-keys
-- KEYS: the meta key of the first shard to read (see common/1-prelude.lua)
-- ARGV: 1 the first shard's base, 2 call flags and clock, 3 host budget (the most hosts answered
--       in all), 4 lane budget (the most lanes read in all), 5 the first shard's offset, 6 its
--       limit (as `hosts_list` takes them), then 3 fields per other shard to read: base,
--       offset, limit; all on the node that serves the first
-- reply: one `hosts_list` reply per shard read, in the order given: the first shard is always
--        read; the next ones while the budgets last (fewer replies than shards: the client
--        asks again for the rest)
-- Pages of hosts from several shards of one queue in one call (docs/PROTOCOL.md section 9,
-- "Readings"): one call per node instead of one per shard, with the work bounded as one
-- `hosts_list` call's is. As stats_shards, keys of other slots are reached undeclared
-- (allow-cross-slot-keys), and a shard whose slot is not on this node fails the call: the
-- client then reads the shards one by one.

local hosts_left, lanes_left = tonumber(ARGV[3]), tonumber(ARGV[4])
local function read(offset, limit)
  local reply = hosts_list_part({ [3] = offset, [4] = math.min(tonumber(limit), hosts_left),
    [5] = lanes_left })
  hosts_left = hosts_left - (#reply - 2) / 7
  lanes_left = lanes_left - LANES_READ
  return reply
end

local replies = { read(ARGV[5], ARGV[6]) }
for i = 7, #ARGV, 3 do
  if hosts_left <= 0 or lanes_left <= 0 then
    break
  end
  local base = ARGV[i]
  local begin_error = begin({ base .. ':meta' }, { base, ARGV[2] })
  if begin_error then
    return begin_error
  end
  replies[#replies + 1] = read(ARGV[i + 1], ARGV[i + 2])
end
return replies
