-- crawlq script: seen_forget
-- protocol: 7
-- flags: allow-oom
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, then pairs: seen member (signed 64-bit decimal), bucket hash (or
--       `<bucket hash>/<crawl>` for a named crawl's item: its member in the crawl's generation
--       is removed, and counted off the crawl's `seen`)
-- reply: how many of them were in the seen set (now removed)
-- Removes fingerprints from the seen set (a deleted host's items, when asked), so that seeding
-- them again adds them. meta.seen keeps counting every member ever added, because it chooses
-- the level new members go to and the levels a seed probes; meta.forgotten counts the removed
-- ones, and stats report seen = meta.seen - meta.forgotten.

local top = current_level(seen_count())
local removed = 0
-- crawl -> its generation, read once per call; crawl -> members removed
local gens, per_crawl = {}, {}
for i = 3, #ARGV - 1, 2 do
  local member, bucket_hash, crawl = ARGV[i], tonumber(ARGV[i + 1]), nil
  if not bucket_hash then
    local digits
    digits, crawl = string.match(ARGV[i + 1], '^(%-?%d+)/(.+)$')
    bucket_hash = tonumber(digits) or fail('INVALID', 'bucket hash ' .. ARGV[i + 1] .. ' is not a number or <number>/<crawl>')
    if gens[crawl] == nil then
      local field = redis.pcall('HGET', CRAWL.seed_key(), crawl)
      gens[crawl], per_crawl[crawl] = CRAWL.seed_config(type(field) == 'string' and field or nil), 0
    end
    if gens[crawl] > 0 then
      member = CRAWL.gen_member(member, gens[crawl])
    end
  end
  for l = top, 0, -1 do
    -- (a bucket holding a foreign value holds no member: passed over)
    if redis.pcall('SREM', seen_key(l, bucket_hash), member) == 1 then
      removed = removed + 1
      if crawl then
        per_crawl[crawl] = per_crawl[crawl] + 1
      end
      break
    end
  end
end
counter('forgotten', removed)
for crawl, n in pairs(per_crawl) do
  -- (a foreign value at the crawl's counts only loses this count)
  if n > 0 then
    redis.pcall('HINCRBY', BASE .. ':c:' .. crawl, 'seen', -n)
  end
end
return removed
