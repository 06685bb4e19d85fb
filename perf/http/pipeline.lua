-- wrk -s pipeline.lua: each connection sends PIPELINE requests at a time
-- (environment, default 16), as wrk's own pipelining example does.
init = function(args)
  local n = tonumber(os.getenv("PIPELINE") or "16")
  local r = {}
  for i = 1, n do r[i] = wrk.format(nil, "/") end
  req = table.concat(r)
end
request = function() return req end
