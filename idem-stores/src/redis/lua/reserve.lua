-- reserve: KEYS[1] = record key
-- ARGV = now, owner, fingerprint, lease_until, expiry of the new key in ms (lease + grace),
--        abandoned_before (an in-progress record whose lease passed before it is abandoned,
--        unless its steps still hold the key), fencing token proposed by the claim
-- Replies {'reserved'}
--       | {'took_over', previous owner, attempt, fencing token, {step field, value, ...}}
--       | {'held', {field, value, ...}} (this owner's own record: a retried request)
--       | {'existing', {field, value, ...}} | {'corrupt', reason}
-- Fencing tokens stay below 2^53, so Lua's doubles hold them exactly.
local key = KEYS[1]
local now, owner, fingerprint, lease_until, px = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local abandoned_before, fencing = ARGV[6], tonumber(ARGV[7])

-- Writes the claim's record. `replace` removes every other field the key held; otherwise the
-- fields not written here (the steps of a takeover by the same call) stay, and `kept` (their
-- `steps_kept_until`, or nil) bounds the key's expiry from below.
local function write(replace, attempt, token, kept)
  local offset = tonumber(now) - server_millis()
  local record = {
    'state', 'in_progress',
    'fingerprint', fingerprint,
    'owner', owner,
    'lease_until', lease_until,
    'fencing_token', string.format('%.0f', token),
    'attempt', tostring(attempt),
    'clock_offset', string.format('%.0f', offset)}
  if replace then
    overwrite(key, record)
  else
    redis.call('HSET', key, unpack(record))
  end
  redis.call('PEXPIRE', key, covering(tonumber(px), kept, tonumber(now)))
end

local fields = redis.pcall('HGETALL', key)
if fields['err'] then
  return wrong_type(key)
end
if #fields == 0 then
  write(false, 1, fencing, nil)
  return {'reserved'}
end
local record = {}
for i = 1, #fields, 2 do
  record[fields[i]] = fields[i + 1]
end

local state = record['state']
if state == 'completed' then
  local expires_at = record['expires_at']
  if not is_millis(expires_at) then
    return corrupt('field `expires_at` is not a timestamp')
  end
  if before(now, expires_at) then
    return {'existing', fields}
  end
  write(true, 1, fencing, nil)
  return {'reserved'}
elseif state == 'in_progress' then
  local lease = record['lease_until']
  if not is_millis(lease) then
    return corrupt('field `lease_until` is not a timestamp')
  end
  local steps, refusal = read_steps(fields)
  if refusal then
    return refusal
  end
  if record['owner'] == owner then
    -- A retry of this very claim whose reply was lost.
    return {'held', fields}
  end
  if before(now, lease) then
    return {'existing', fields}
  end
  local same_call = record['fingerprint'] == fingerprint
  local held_by_steps = steps.any and before(now, steps.kept)
  if not same_call and (before(abandoned_before, lease) or held_by_steps) then
    return {'existing', fields}
  end
  local previous = record['owner']
  if not previous then
    return corrupt('field `owner` is missing')
  end
  local previous_token = tonumber(record['fencing_token'] or '0')
  local previous_attempt = tonumber(record['attempt'] or '1')
  if not previous_token or not previous_attempt then
    return corrupt('field `fencing_token` or `attempt` is not a number')
  end
  local token = math.max(fencing, previous_token + 1)
  local attempt, kept_steps = 1, {}
  if same_call then
    -- The same call resumes after its steps: they stay in the hash.
    attempt, kept_steps = previous_attempt + 1, steps.fields
    write(false, attempt, token, steps.kept)
  else
    write(true, attempt, token, nil)
  end
  redis.call('PUBLISH', key, 'taken_over')
  return {'took_over', previous, tostring(attempt), string.format('%.0f', token), kept_steps}
elseif state then
  return corrupt('unknown state `' .. state .. '`')
else
  return corrupt('field `state` is missing')
end
