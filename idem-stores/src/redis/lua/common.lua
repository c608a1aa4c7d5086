-- Shared by every script (prepended to each).
-- A record is one string: 'idm1', a state byte ('P' in progress, 'C' completed), then its
-- fields, each its length in decimal digits, ':', and its bytes (see the module docs).
-- Scripts that end an in-progress record (complete, release, a takeover) publish its state on
-- the channel named like the key, which waiting callers subscribe to.
-- Timestamps are decimal milliseconds and compared as strings, exactly, without going
-- through Lua's doubles.

local MAGIC = 'idm1'

local function is_millis(s)
  return type(s) == 'string' and #s <= 20 and (s == '0' or string.match(s, '^[1-9]%d*$') ~= nil)
end

-- a < b for two timestamps accepted by is_millis.
local function before(a, b)
  if #a ~= #b then
    return #a < #b
  end
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      return x < y
    end
  end
  return false
end

local function corrupt(reason)
  return {'corrupt', reason}
end

-- The reply when a command failed because the key holds another type (WRONGTYPE).
local function wrong_type(key)
  return corrupt('the key holds a ' .. redis.call('TYPE', key)['ok'] ..
    ', not a record of this layout (an earlier layout?)')
end

-- The record under `key` as read: its value, false when there is none, or nil and the reply
-- to give when the key holds another type.
local function read(key)
  local value = redis.pcall('GET', key)
  if type(value) == 'table' and value['err'] then
    return nil, wrong_type(key)
  end
  return value
end

-- The fields of a record's value after its magic and state byte; nil and why if malformed.
local function fields_of(value)
  local items, at = {}, 6
  while at <= #value do
    local _, colon, digits = string.find(value, '^(%d+):', at)
    if not colon or #digits > 9 then
      return nil, 'a field length is missing, too long or not a number'
    end
    local stop = colon + tonumber(digits)
    if stop > #value then
      return nil, 'a field runs past the end of the record'
    end
    items[#items + 1] = string.sub(value, colon + 1, stop)
    at = stop + 1
  end
  return items
end

-- Decodes a record's value into a table; nil and why if it is not a record.
local function decode(value)
  if string.sub(value, 1, 4) ~= MAGIC then
    return nil, 'not a record of this layout'
  end
  local state = string.sub(value, 5, 5)
  local items, why = fields_of(value)
  if not items then
    return nil, why
  end
  if state == 'C' then
    if #items ~= 5 then
      return nil, 'a completed record has ' .. #items .. ' fields, not 5'
    end
    local r = {state = 'completed', fingerprint = items[1], owner = items[2],
      outcome = items[3], expires_at = items[4], body = items[5]}
    if not is_millis(r.expires_at) then
      return nil, '`expires_at` is not a timestamp'
    end
    if r.outcome ~= 'ok' and r.outcome ~= 'err' and r.outcome ~= 'aborted' then
      return nil, 'unknown outcome `' .. r.outcome .. '`'
    end
    return r
  elseif state == 'P' then
    if #items < 7 or #items % 2 == 0 then
      return nil, 'an in-progress record has ' .. #items .. ' fields'
    end
    local r = {state = 'in_progress', fingerprint = items[1], owner = items[2],
      lease_until = items[3], fencing_token = items[4], attempt = items[5], anchor = items[6],
      kept = items[7], steps = {}}
    for _, name in ipairs({'lease_until', 'fencing_token', 'attempt', 'anchor'}) do
      if not is_millis(r[name]) then
        return nil, '`' .. name .. '` is not a number'
      end
    end
    local names = {}
    for i = 8, #items, 2 do
      if names[items[i]] then
        return nil, 'the step `' .. items[i] .. '` is recorded twice'
      end
      names[items[i]] = true
      r.steps[#r.steps + 1] = items[i]
      r.steps[#r.steps + 1] = items[i + 1]
    end
    if r.kept == '' then
      if #r.steps > 0 then
        return nil, '`steps_kept_until` is missing'
      end
    elseif not is_millis(r.kept) then
      return nil, '`steps_kept_until` is not a timestamp'
    end
    return r
  end
  return nil, 'unknown state `' .. state .. '`'
end

local function field(s)
  return #s .. ':' .. s
end

-- The fingerprint and expiry of the completed record under `key`, read from its first
-- 1024 bytes alone (idem-core's `RECORD_HEAD_ROOM`): they come before its outcome, which is
-- not read. nil when they are not there.
local function completed_head(key)
  local head = redis.call('GETRANGE', key, 0, 1023)
  if string.sub(head, 1, 5) ~= MAGIC .. 'C' then
    return nil
  end
  local items, at = {}, 6
  while #items < 4 do
    local _, colon, digits = string.find(head, '^(%d+):', at)
    if not colon or #digits > 9 then
      return nil
    end
    local stop = colon + tonumber(digits)
    if stop > #head then
      return nil
    end
    items[#items + 1] = string.sub(head, colon + 1, stop)
    at = stop + 1
  end
  if not is_millis(items[4]) then
    return nil
  end
  return items[1], items[4]
end

-- The reply for a completed record `length` bytes long over the call's limit: its length, and
-- its fingerprint and expiry when its head holds them, so that the caller tells an expired
-- record (taken over) and another call's (a mismatch) from one it would replay.
local function too_long(key, length)
  local fingerprint, expires_at = completed_head(key)
  if fingerprint then
    return {'too_long', length, fingerprint, expires_at}
  end
  return {'too_long', length}
end

-- Redis's copy of the size rule (idem-core's `check_record_len` is the rule), for the scripts
-- that read a record no longer than `max`: the reply to give instead of reading it, or nil to
-- go on. The length is measured before the value is read, so that an oversized record never
-- leaves the server: a completed record longer than `max` is answered by `too_long`, and
-- another type under the key by the error the plain command would give (WRONGTYPE).
local function refused_by_length(key, max)
  local length = redis.pcall('STRLEN', key)
  if type(length) == 'table' then
    return length
  end
  if length > max and redis.call('GETRANGE', key, 0, 4) == MAGIC .. 'C' then
    return too_long(key, length)
  end
  return nil
end

local function encode(r)
  if r.state == 'completed' then
    return MAGIC .. 'C' .. field(r.fingerprint) .. field(r.owner) .. field(r.outcome) ..
      field(r.expires_at) .. field(r.body)
  end
  local parts = {MAGIC, 'P', field(r.fingerprint), field(r.owner), field(r.lease_until),
    field(r.fencing_token), field(r.attempt), field(r.anchor), field(r.kept)}
  for _, item in ipairs(r.steps) do
    parts[#parts + 1] = field(item)
  end
  return table.concat(parts)
end

-- The record under `key`, decoded: the table and nil, nil and nil when there is none, or
-- nil and the reply to give when it cannot be read.
local function load_record(key)
  local value, refusal = read(key)
  if value == nil then
    return nil, refusal
  end
  if not value then
    return nil, nil
  end
  local r, why = decode(value)
  if not r then
    return nil, corrupt(why)
  end
  return r, nil, value
end

-- A PX argument: at least 1 ms, at most about 31 000 years.
local function expiry(ms)
  if ms ~= ms or ms < 1 then
    return 1
  elseif ms > 1e15 then
    return 1e15
  end
  return math.floor(ms)
end

-- The caller's clock now, estimated from the record's anchor (the caller-clock time its key
-- expires at) and the key's remaining time; nil when the key has no expiry (an operator
-- removed it), and writes then keep it without one rather than guess from another clock.
local function caller_now(key, r)
  local ttl = redis.call('PTTL', key)
  if ttl >= 0 then
    return tonumber(r.anchor) - ttl
  end
  return nil
end

-- Writes the record `r` under `key` to expire in `ms` from `now` (the caller's clock), or
-- keeps the key's expiry when `now` is unknown. SET overwrites in place: a key is never
-- deleted to be written again (while its slot migrates, a script may write only keys that
-- exist on this node).
local function write(key, r, now, ms)
  if not now then
    redis.call('SET', key, encode(r), 'KEEPTTL')
    return
  end
  ms = expiry(ms)
  if r.state == 'in_progress' then
    r.anchor = string.format('%.0f', now + ms)
  end
  redis.call('SET', key, encode(r), 'PX', string.format('%.0f', ms))
end

-- How long a key must last: `ms` more, and until `kept` (a timestamp or '') at least.
local function covering(ms, kept, now)
  if kept ~= '' and now then
    ms = math.max(ms, tonumber(kept) - now)
  end
  return ms
end

-- The in-progress record under `key` if `owner` holds it: the table and nil; else the record
-- as read (or nil) and the reply to give: {'lost'} or {'corrupt', reason}.
local function owned(key, owner)
  local r, refusal = load_record(key)
  if refusal then
    return nil, refusal
  end
  if not r or r.state ~= 'in_progress' or r.owner ~= owner then
    return r, {'lost'}
  end
  return r, nil
end

-- The anchor of `value` if it is an in-progress record without steps that `owner` holds,
-- read without decoding it whole (the completion of every fresh call takes this path); nil
-- otherwise, or when anything looks amiss, for `owned` to judge. It reads no more than the
-- completion needs: the lease, token and attempt it skips are replaced by the completed
-- record, which only this owner can write. The fingerprint is always 64 digits, so
-- the owner's field starts at a fixed place, and comparing it with its length prefix
-- compares the owner exactly.
local function held_anchor(value, owner)
  local owner_field = field(owner)
  if string.sub(value, 1, 8) ~= MAGIC .. 'P64:' or
      string.sub(value, 73, 72 + #owner_field) ~= owner_field then
    return nil
  end
  local at, anchor = 73 + #owner_field, nil
  -- lease_until, fencing token, attempt, anchor
  for _ = 1, 4 do
    local _, colon, digits = string.find(value, '^(%d%d?):', at)
    if not colon then
      return nil
    end
    local stop = colon + tonumber(digits)
    anchor = string.sub(value, colon + 1, stop)
    at = stop + 1
  end
  -- Only a record without steps (an empty `steps_kept_until` and nothing after) is taken
  -- here; one with steps is decoded whole, and checked.
  if string.sub(value, at) ~= '0:' or not is_millis(anchor) then
    return nil
  end
  return anchor
end
