-- crawlq script: host_config
-- protocol: 2
-- flags: allow-oom
-- KEYS: the 12 queue keys (see common.lua)
-- ARGV: 1 base, 2 clock, 3 host key, 4 politeness delay ms for this host ('' removes the
--       override, so the workers' default applies again; '-' leaves it as it is)
-- reply: {previous override ms or -1, adaptive extra ms, ready items of the host,
--         held back until (ms) or -1}

local host, delay = ARGV[3], ARGV[4]
local previous = redis.call('HGET', K_HOSTDELAY, host)
expect_types({ K_ADAPTIVE, 'hash', K_WAIT, 'zset' })
if delay == '' then
  redis.call('HDEL', K_HOSTDELAY, host)
elseif delay ~= '-' then
  redis.call('HSET', K_HOSTDELAY, host, delay)
end
local ready = 0
for _, p in ipairs(redis.call('ZRANGE', hp_key(host), 0, -1)) do
  ready = ready + redis.call('LLEN', lane_key(host, p))
end
local until_ms = redis.call('ZSCORE', K_WAIT, host)
return {
  previous and tonumber(previous) or -1,
  tonumber(redis.call('HGET', K_ADAPTIVE, host) or '0'),
  ready,
  until_ms and tonumber(until_ms) or -1,
}
