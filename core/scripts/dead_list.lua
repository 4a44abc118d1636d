-- crawlq script: dead_list
-- protocol: 2
-- flags: no-writes
-- KEYS: the 12 queue keys (see common.lua)
-- ARGV: 1 base, 2 clock, 3 offset, 4 limit
-- reply: {total, id1, died_at1, record1, id2, ...} oldest dead letter first

local offset, limit = tonumber(ARGV[3]), tonumber(ARGV[4])
local out = { redis.call('ZCARD', K_DEAD) }
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
