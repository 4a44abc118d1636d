-- crawlq script: hosts_list
-- protocol: 7
-- flags: no-writes
-- KEYS: the queue's meta key (see common/1-prelude.lua)
-- ARGV: 1 base, 2 clock, 3 offset, 4 limit (hosts), 5 lane budget (the most lanes read; at
--       least one host is always answered)
-- reply: {now, hosts in all, then 7 fields per host: host key, items (queued, leased or dead),
--         ready, delayed, dead, next due ms (when its next ready item may be leased; -1: no
--         ready item, or paused until resumed), paused until ms (0: until resumed, -1: not
--         paused)}
-- Hosts come in the order of hostitems: most items first, then by host key. Leased items are
-- the rest: items - ready - delayed - dead. Work per call is bounded by limit and the lane
-- budget (a host's ready items are the lengths of its lanes); the client asks for the next
-- page from offset + hosts answered (the Rust client asks for at most 250 hosts per call).

local offset, limit, lane_budget = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local total = redis.call('ZCARD', K_HOSTITEMS)
local page = redis.call('ZRANGE', K_HOSTITEMS, offset, offset + limit - 1, 'WITHSCORES')
-- The hosts answered (as many as the lane budget allows, at least one) and their ready items,
-- the lengths of their lanes; then their other counts, pauses and holds with one read each.
local hosts, items, ready = {}, {}, {}
local lanes_read = 0
for i = 1, #page, 2 do
  if lanes_read >= lane_budget and i > 1 then
    break
  end
  local host = page[i]
  local n, lanes = host_ready(host)
  lanes_read = lanes_read + lanes
  hosts[#hosts + 1] = host
  items[#hosts] = -tonumber(page[i + 1])
  ready[#hosts] = n
end
LANES_READ = lanes_read
local out = { NOW, total }
if #hosts == 0 then
  return out
end
local delayed = call_chunked('HMGET', K_HOSTDELAYED, hosts)
local dead = call_chunked('HMGET', K_HOSTDEAD, hosts)
local pauses = call_chunked('HMGET', K_HOSTPAUSE, hosts)
local holds = call_chunked('ZMSCORE', K_WAIT, hosts)
for i, host in ipairs(hosts) do
  local paused_until = -1
  if pauses[i] then
    local ends = tonumber(string.match(pauses[i], '^(%d+)')) or 0
    if ends >= PAUSED_FOREVER then
      paused_until = 0
    elseif ends > NOW then
      paused_until = ends
    end
  end
  local due = -1
  if ready[i] > 0 then
    local held = holds[i]
    if held then
      held = tonumber(held)
      if held < PAUSED_FOREVER then
        due = math.max(held, NOW)
      end
    else
      due = NOW
    end
  end
  out[#out + 1] = host
  out[#out + 1] = items[i]
  out[#out + 1] = ready[i]
  out[#out + 1] = tonumber(delayed[i] or '0')
  out[#out + 1] = tonumber(dead[i] or '0')
  out[#out + 1] = due
  out[#out + 1] = paused_until
end
return out
