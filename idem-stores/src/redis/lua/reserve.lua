-- reserve: KEYS[1] = record key
-- ARGV = now, owner, fingerprint, lease_until, expiry of the new key in ms (lease + grace),
--        abandoned_before (an in-progress record whose lease passed before it is abandoned),
--        fencing token proposed by the claim
-- Replies {'reserved'} | {'took_over', previous owner, attempt, fencing token}
--       | {'held', {field, value, ...}} (this owner's own record: a retried request)
--       | {'existing', {field, value, ...}} | {'corrupt', reason}
-- Fencing tokens stay below 2^53, so Lua's doubles hold them exactly.
local key = KEYS[1]
local now, owner, fingerprint, lease_until, px = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local abandoned_before, fencing = ARGV[6], tonumber(ARGV[7])

local function write(replace, attempt, token)
  local offset = tonumber(now) - server_millis()
  if replace then
    redis.call('DEL', key)
  end
  redis.call('HSET', key,
    'state', 'in_progress',
    'fingerprint', fingerprint,
    'owner', owner,
    'lease_until', lease_until,
    'fencing_token', string.format('%.0f', token),
    'attempt', tostring(attempt),
    'clock_offset', string.format('%.0f', offset))
  redis.call('PEXPIRE', key, px)
end

local fields = redis.pcall('HGETALL', key)
if fields['err'] then
  return wrong_type(key)
end
if #fields == 0 then
  write(false, 1, fencing)
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
  write(true, 1, fencing)
  return {'reserved'}
elseif state == 'in_progress' then
  local lease = record['lease_until']
  if not is_millis(lease) then
    return corrupt('field `lease_until` is not a timestamp')
  end
  if record['owner'] == owner then
    -- A retry of this very claim whose reply was lost.
    return {'held', fields}
  end
  if before(now, lease) then
    return {'existing', fields}
  end
  if record['fingerprint'] ~= fingerprint and before(abandoned_before, lease) then
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
  local attempt = 1
  if record['fingerprint'] == fingerprint then
    attempt = previous_attempt + 1
  end
  local token = math.max(fencing, previous_token + 1)
  write(true, attempt, token)
  redis.call('PUBLISH', key, 'taken_over')
  return {'took_over', previous, tostring(attempt), string.format('%.0f', token)}
elseif state then
  return corrupt('unknown state `' .. state .. '`')
else
  return corrupt('field `state` is missing')
end
