-- renew: KEYS[1] = record key; ARGV = owner, lease_until, grace in ms
-- Replies {'ok'} | {'lost'} | {'corrupt', reason}
local key = KEYS[1]
local owner, lease_until, grace = ARGV[1], ARGV[2], tonumber(ARGV[3])
local refusal, offset = owned(key, owner)
if refusal then
  return refusal
end
redis.call('HSET', key, 'lease_until', lease_until)
redis.call('PEXPIRE', key, expiry(tonumber(lease_until) - (server_millis() + offset) + grace))
return {'ok'}
