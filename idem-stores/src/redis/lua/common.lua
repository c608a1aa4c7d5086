-- Shared by every script (prepended to each).
-- Scripts that end an in-progress record (complete, release, a takeover) publish its state on
-- the channel named like the key, which waiting callers subscribe to.
-- Timestamps are decimal milliseconds and compared as strings, exactly, without going
-- through Lua's doubles.

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
  return corrupt('the key holds a ' .. redis.call('TYPE', key)['ok'] .. ', not a hash')
end

-- Redis's own clock, in milliseconds. Used only to turn the caller's deadlines into the
-- key's expiry (a clean-up timer); liveness is always judged by the caller's time.
local function server_millis()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- A PEXPIRE argument: at least 1 ms, at most about 31 000 years.
local function expiry(ms)
  if ms ~= ms or ms < 1 then
    ms = 1
  elseif ms > 1e15 then
    ms = 1e15
  end
  return string.format('%.0f', math.floor(ms))
end

-- Checks that `key` holds an in-progress record owned by `owner`. Returns nil and the
-- record's clock offset if so, else the reply to give: {'lost'} or {'corrupt', reason}.
local function owned(key, owner)
  local f = redis.pcall('HMGET', key, 'state', 'owner', 'clock_offset')
  if f['err'] then
    return wrong_type(key)
  end
  local state, holder, offset = f[1], f[2], f[3]
  if not state and not holder and not offset and redis.call('EXISTS', key) == 0 then
    return {'lost'}
  end
  if state == 'completed' then
    return {'lost'}
  end
  if state ~= 'in_progress' then
    return corrupt(state and ('unknown state `' .. state .. '`') or 'field `state` is missing')
  end
  if holder ~= owner then
    return {'lost'}
  end
  offset = tonumber(offset)
  if not offset then
    return corrupt('field `clock_offset` is not a number')
  end
  return nil, offset
end

-- Steps live in the record's hash: one field per step, named by this prefix and the step's
-- name, and `steps_kept_until`, until when they hold the key. No other field starts with the
-- prefix.
local STEP_PREFIX = 'step:'

local function is_step_field(name)
  return string.sub(name, 1, #STEP_PREFIX) == STEP_PREFIX
end

-- Checks a `steps_kept_until` value (nil when absent). Returns the reply to give when it is
-- not a timestamp, else nil.
local function bad_kept_until(kept)
  if kept ~= nil and kept ~= false and not is_millis(kept) then
    return corrupt('field `steps_kept_until` is not a timestamp')
  end
  return nil
end

-- The steps of a record read with HGETALL (a flat list): `fields`, its step fields and
-- `steps_kept_until` as a flat list; `kept`, `steps_kept_until` or nil; `any`, whether a step
-- is recorded. Returns nil and the reply to give when they disagree.
local function read_steps(fields)
  local steps = {fields = {}, kept = nil, any = false}
  for i = 1, #fields, 2 do
    local name = fields[i]
    if is_step_field(name) then
      steps.fields[#steps.fields + 1] = name
      steps.fields[#steps.fields + 1] = fields[i + 1]
      steps.any = true
    elseif name == 'steps_kept_until' then
      steps.kept = fields[i + 1]
    end
  end
  local refusal = bad_kept_until(steps.kept)
  if refusal then
    return nil, refusal
  end
  if steps.any and steps.kept == nil then
    return nil, corrupt('field `steps_kept_until` is missing')
  end
  if steps.kept ~= nil then
    steps.fields[#steps.fields + 1] = 'steps_kept_until'
    steps.fields[#steps.fields + 1] = steps.kept
  end
  return steps
end

-- A PEXPIRE argument for a key that must last `ms` more, and until `kept` (a timestamp, or
-- nil or false) at least, `now` being the clock `kept` is on, as a number.
local function covering(ms, kept, now)
  if kept then
    ms = math.max(ms, tonumber(kept) - now)
  end
  return expiry(ms)
end

-- Sets the flat field, value list `written` on the record under `key`, then removes every
-- other field. Never deletes the key and writes it again: while its slot migrates, a script may
-- write only keys that exist on this node, so the write after a DEL is refused, and a script
-- that stops halfway keeps what it did. Overwriting leaves the record whole at every step.
local function overwrite(key, written)
  redis.call('HSET', key, unpack(written))
  local kept = {}
  for i = 1, #written, 2 do
    kept[written[i]] = true
  end
  local stale = {}
  for _, name in ipairs(redis.call('HKEYS', key)) do
    if not kept[name] then
      stale[#stale + 1] = name
      -- In batches, to stay within Lua's limit on unpacked arguments.
      if #stale == 1000 then
        redis.call('HDEL', key, unpack(stale))
        stale = {}
      end
    end
  end
  if #stale > 0 then
    redis.call('HDEL', key, unpack(stale))
  end
end
