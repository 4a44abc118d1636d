-- crawlq script: host_budget
-- protocol: 7
-- flags: allow-oom
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 host key ('' for the queue's default budget), 4 budget: the most
--       new URLs the host may add ('-' only reads, '' removes it)
-- reply: {the host's own budget (for '': the default) or -1, the default budget or -1, URLs the
--         host added while budgets were on (0 for '')}
-- A budget counts the new URLs a host adds from the time any budget is set on the queue
-- (seed.lua); removing every budget stops the counting but keeps the counts.

local host, budget = ARGV[3], ARGV[4]
local default = redis.call('HGET', K_META, 'budget')
local own = host ~= '' and redis.call('HGET', K_HOSTBUDGET, host) or false
local used = host ~= '' and tonumber(redis.call('HGET', K_HOSTUSED, host) or '0') or 0
if host == '' then
  if budget == '' then
    redis.call('HDEL', K_META, 'budget')
    default = false
  elseif budget ~= '-' then
    redis.call('HSET', K_META, 'budget', budget)
    default = budget
  end
  own = default
elseif budget == '' then
  redis.call('HDEL', K_HOSTBUDGET, host)
  own = false
elseif budget ~= '-' then
  redis.call('HSET', K_HOSTBUDGET, host, budget)
  own = budget
end
return { own and tonumber(own) or -1, default and tonumber(default) or -1, used }
