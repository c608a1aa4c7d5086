-- reserve: KEYS[1] = record key
-- ARGV = now, owner, fingerprint, lease_until, expiry of the new key in ms (lease + grace),
--        abandoned_before (an in-progress record whose lease passed before it is abandoned)
-- Replies {'reserved'} | {'took_over', previous owner} | {'existing', {field, value, ...}}
--       | {'corrupt', reason}
local key = KEYS[1]
local now, owner, fingerprint, lease_until, px = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local abandoned_before = ARGV[6]

local function write(replace)
  local offset = tonumber(now) - server_millis()
  if replace then
    redis.call('DEL', key)
  end
  redis.call('HSET', key,
    'state', 'in_progress',
    'fingerprint', fingerprint,
    'owner', owner,
    'lease_until', lease_until,
    'clock_offset', string.format('%.0f', offset))
  redis.call('PEXPIRE', key, px)
end

local fields = redis.pcall('HGETALL', key)
if fields['err'] then
  return wrong_type(key)
end
if #fields == 0 then
  write(false)
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
  write(true)
  return {'reserved'}
elseif state == 'in_progress' then
  local lease = record['lease_until']
  if not is_millis(lease) then
    return corrupt('field `lease_until` is not a timestamp')
  end
  if record['owner'] == owner then
    -- A retry of this very claim whose reply was lost.
    return {'reserved'}
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
  write(true)
  return {'took_over', previous}
elseif state then
  return corrupt('unknown state `' .. state .. '`')
else
  return corrupt('field `state` is missing')
end
