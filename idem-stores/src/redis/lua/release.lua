-- release: KEYS[1] = record key; ARGV = owner
-- Replies {'ok'} | {'lost'} | {'corrupt', reason}
-- A record with steps is kept, with its lease ended (0), for the same call to resume; its
-- expiry already covers the steps.
local key = KEYS[1]
local refusal = owned(key, ARGV[1])
if refusal then
  return refusal
end
local has_steps = false
for _, name in ipairs(redis.call('HKEYS', key)) do
  if is_step_field(name) then
    has_steps = true
    break
  end
end
if has_steps then
  redis.call('HSET', key, 'lease_until', '0')
else
  redis.call('DEL', key)
end
redis.call('PUBLISH', key, 'released')
return {'ok'}
