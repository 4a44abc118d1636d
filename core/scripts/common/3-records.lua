-- Record layout (fixed field order, see docs/PROTOCOL.md):
-- {"v":1,"id":"<id>","ts":<ms>[,"host":"<host>"][,"priority":<p>][,"attempt":<n>]
--   [,"crawl":"<crawl>","tag":<tag>][,"url":"<url>"][,"key":"<key>"][,"last_error":"<text>"][,"payload":<json>]}
-- (priority and attempt are left out when 0, and host when it is the URL's host: the text
-- between "://" and the next '/' or ':'; protocol 2 wrote "attempt":0 and protocol 3 every
-- host, both still read.)
-- Returns nil for a record that does not have this shape (written by something else); else
-- id, ts, host, priority, attempt, the position after them (and after the crawl), whether the
-- host is written, the crawl (nil: the default crawl) and its tag (digits).
-- A record's url field and the host its URL spells (what stands between "://" and the next '/'
-- or ':'), anchored where the match starts.
local REC_URL_HOST, REC_HEAD_URL_HOST
do
  local url_host = ',"url":"https?://([^/:"]+)'
  REC_URL_HOST = '^' .. url_host
  REC_HEAD_URL_HOST = '^{"v":1,"id":"([^"]*)","ts":(%d+)()' .. url_host
end
local function rec_head(rec)
  -- most records: priority 0, no failed attempt, the host spelled by the URL (one match)
  local _, e, id, ts, pos, host = string.find(rec, REC_HEAD_URL_HOST)
  if e then
    return id, ts + 0, host, 0, 0, pos, false
  end
  _, e, id, ts = string.find(rec, '^{"v":1,"id":"([^"]*)","ts":(%d+)')
  if not e then
    return nil
  end
  local _, e1, host = string.find(rec, '^,"host":"([^"]*)"', e + 1)
  if e1 then
    e = e1
  end
  local prio, attempt = 0, 0
  local _, e2, p = string.find(rec, '^,"priority":(%-?%d+)', e + 1)
  if e2 then
    prio = p + 0
    e = e2
  end
  local _, e3, a = string.find(rec, '^,"attempt":(%d+)', e + 1)
  if e3 then
    attempt = a + 0
    e = e3
  end
  local _, e4, crawl, tag = string.find(rec, '^,"crawl":"([^"]*)","tag":(%d+)', e + 1)
  if e4 then
    e = e4
  end
  if e1 then
    return id, ts + 0, host, prio, attempt, e + 1, true, crawl, tag
  end
  host = string.match(rec, REC_URL_HOST, e + 1)
  if not host then
    return nil
  end
  return id, ts + 0, host, prio, attempt, e + 1, false, crawl, tag
end

-- host_written: false leaves the host out (a record whose URL's host it is); crawl: nil for the
-- default crawl, else with its tag (digits).
local function rec_prefix(id, ts, host, host_written, prio, attempt, crawl, tag)
  local s = '{"v":1,"id":"' .. id .. '","ts":' .. int(ts)
  if host_written then
    s = s .. ',"host":"' .. host .. '"'
  end
  if prio ~= 0 then
    s = s .. ',"priority":' .. int(prio)
  end
  if attempt ~= 0 then
    s = s .. ',"attempt":' .. int(attempt)
  end
  if crawl then
    s = s .. ',"crawl":"' .. crawl .. '","tag":' .. tag
  end
  if not host_written then
    own_format()
  elseif attempt == 0 then
    own_format('3')
  end
  return s
end

-- The position just after the JSON string literal whose contents start at i (escapes skipped),
-- or nil when it does not end.
local function json_string_end(s, i)
  while true do
    local c = string.find(s, '["\\]', i)
    if not c then
      return nil
    end
    if string.sub(s, c, c) == '\\' then
      i = c + 2
    else
      return c + 1
    end
  end
end

-- Rewrite the mutable fields of a record. last_error_json is a JSON string literal, or nil to
-- keep the stored one; payload_json is the new payload's JSON, or nil or '' to keep the stored
-- one. Returns nil when the record cannot be read (the caller keeps it as is).
local function rec_rebuild(rec, ts, attempt, last_error_json, payload_json)
  local id, _, host, prio, _, pos, host_written, crawl, tag = rec_head(rec)
  if not id then
    return nil
  end
  local rest = string.sub(rec, pos)
  -- url and key are kept as they are
  local url_part = ''
  local _, e = string.find(rest, '^,"url":"[^"]*"')
  if e then
    url_part = string.sub(rest, 1, e)
    rest = string.sub(rest, e + 1)
  end
  if string.find(rest, '^,"key":"') then
    local after = json_string_end(rest, 9)
    if not after then
      return nil
    end
    url_part = url_part .. string.sub(rest, 1, after - 1)
    rest = string.sub(rest, after)
  end
  local error_part = ''
  if string.find(rest, '^,"last_error":"') then
    local after = json_string_end(rest, 16) -- 16: the first character of the string's contents
    if not after then
      return nil
    end
    error_part = string.sub(rest, 1, after - 1)
    rest = string.sub(rest, after)
  end
  if last_error_json then
    error_part = ',"last_error":' .. last_error_json
  end
  -- the payload is the last field: what is left is either it or the closing brace
  if payload_json and payload_json ~= '' and (rest == '}' or string.find(rest, '^,"payload":')) then
    rest = ',"payload":' .. payload_json .. '}'
  end
  return rec_prefix(id, ts, host, host_written, prio, attempt, crawl, tag) .. url_part .. error_part
    .. rest
end

-- The id (a number) and enqueue time (its digits, as stored) of a record, without parsing the
-- rest. The time stays a string: it is mostly handed straight back to Redis as a score. A record
-- that cannot be read sorts last and counts as queued now, so it is still leased (and then
-- dead-lettered by the client that cannot decode it) instead of failing the call.
local function rec_seq_ts(rec)
  local _, _, id, ts = string.find(rec, '^{"v":1,"id":"(%d+)","ts":(%d+),')
  if not id then
    return SEQ_SPAN - 1, NOW_DIGITS
  end
  return id + 0, ts
end

-- The tag (a number) and enqueue time (digits) of a named crawl's record, the head of a crawl
-- lane; a record that cannot be read ranks last and counts as queued now.
function CRAWL.tag_ts(rec)
  local _, _, ts, tag = string.find(rec, '^{"v":1,"id":"[^"]*","ts":(%d+),.-"tag":(%d+)')
  if not tag then
    return SEQ_SPAN - 1, NOW_DIGITS
  end
  return tag + 0, ts
end

-- A named crawl's record with another tag (the first "tag" field: it comes before any text).
function CRAWL.retag(rec, tag)
  return (string.gsub(rec, ',"tag":%d+', ',"tag":' .. int(tag), 1))
end

-- The id of a record as stored, or '?' when it cannot be read.
local function rec_id(rec)
  local _, _, id = string.find(rec, '^{"v":1,"id":"([^"]*)"')
  return id or '?'
end

