-- crawlq script: crawls_list
-- protocol: 7
-- flags: no-writes
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock
-- reply: the names of the crawls this base knows, sorted: each crawl that seeded an item here
--        (`crawls`, a set) and each with a cap or pause (`crawlcfg`'s fields), a weight
--        (`crawlweight`'s) or a host budget (`crawlseed`'s) here
local names, known = {}, {}
for _, list in ipairs({ redis.call('SMEMBERS', BASE .. ':crawls'), redis.call('HKEYS', CRAWL.cfg_key()),
  redis.call('HKEYS', BASE .. ':crawlweight'), CRAWL.budgeted() }) do
  for _, name in ipairs(list) do
    if not known[name] then
      known[name] = true
      names[#names + 1] = name
    end
  end
end
table.sort(names)
return names
