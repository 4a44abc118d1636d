-- crawlq script: seen_forget
-- protocol: 7
-- flags: allow-oom
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, then pairs: seen member (signed 64-bit decimal), bucket hash
-- reply: how many of them were in the seen set (now removed)
-- Removes fingerprints from the seen set (a deleted host's items, when asked), so that seeding
-- them again adds them. meta.seen keeps counting every member ever added, because it chooses
-- the level new members go to and the levels a seed probes; meta.forgotten counts the removed
-- ones, and stats report seen = meta.seen - meta.forgotten.

local top = current_level(seen_count())
local removed = 0
for i = 3, #ARGV - 1, 2 do
  local member, bucket_hash = ARGV[i], tonumber(ARGV[i + 1])
  for l = top, 0, -1 do
    -- (a bucket holding a foreign value holds no member: passed over)
    if redis.pcall('SREM', seen_key(l, bucket_hash), member) == 1 then
      removed = removed + 1
      break
    end
  end
end
counter('forgotten', removed)
return removed
