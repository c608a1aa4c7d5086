-- release: KEYS[1] = record key; ARGV = owner
-- Replies {'ok'} | {'lost'} | {'corrupt', reason}
local key = KEYS[1]
local refusal = owned(key, ARGV[1])
if refusal then
  return refusal
end
redis.call('DEL', key)
redis.call('PUBLISH', key, 'released')
return {'ok'}
