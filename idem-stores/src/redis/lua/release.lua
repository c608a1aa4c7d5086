-- release: KEYS[1] = record key; ARGV = owner
-- Replies {'ok'} | {'lost'} | {'corrupt', reason}
-- A record with steps is kept, with its lease ended (0), for the same call to resume; its
-- expiry already covers the steps.
local key = KEYS[1]
local r, refusal = owned(key, ARGV[1])
if refusal then
  return refusal
end
if #r.steps > 0 then
  r.lease_until = '0'
  redis.call('SET', key, encode(r), 'KEEPTTL')
else
  redis.call('DEL', key)
end
redis.call('PUBLISH', key, 'released')
return {'ok'}
