-- crawlq script: dead_list
-- protocol: 7
-- flags: no-writes
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 offset, 4 limit, then optionally ids
-- reply: {total, id1, died_at1, record1, id2, ...} oldest dead letter first; with ids, one
--        triple per id in the order given, died_at -1 and record '' for an id that is not a
--        dead letter (offset and limit are then ignored)

local offset, limit = tonumber(ARGV[3]), tonumber(ARGV[4])
local out = { redis.call('ZCARD', K_DEAD) }
if #ARGV > 4 then
  for i = 5, #ARGV do
    local died_at = redis.call('ZSCORE', K_DEAD, ARGV[i])
    out[#out + 1] = ARGV[i]
    out[#out + 1] = died_at and tonumber(died_at) or -1
    out[#out + 1] = died_at and (redis.call('HGET', K_DEADREC, ARGV[i]) or '') or ''
  end
  return out
end
if limit <= 0 then
  return out
end
local page = redis.call('ZRANGE', K_DEAD, offset, offset + limit - 1, 'WITHSCORES')
for i = 1, #page, 2 do
  out[#out + 1] = page[i]
  out[#out + 1] = tonumber(page[i + 1])
  out[#out + 1] = redis.call('HGET', K_DEADREC, page[i]) or ''
end
return out
