-- The wallet poll's cache key (envoy.yaml: on that route only, before the cache).
--
-- Envoy's in-memory cache never evicts and keys on the Host header and the whole query,
-- so that a client varying either could grow it without end. Here the request is
-- reduced to what the reply depends on: one authority, and the path with its `eoa`
-- parameter alone (the transcoder ignores every other parameter anyway).

local find, sub = string.find, string.sub

function envoy_on_request(handle)
  local headers = handle:headers()
  headers:replace(':authority', 'yieldagent')
  local path = headers:get(':path')
  local mark = find(path, '?', 1, true)
  if not mark then return end
  local eoa = nil
  for pair in string.gmatch(sub(path, mark + 1), '[^&]+') do
    if sub(pair, 1, 4) == 'eoa=' then
      eoa = pair
      break
    end
  end
  headers:replace(':path', sub(path, 1, mark - 1) .. (eoa and ('?' .. eoa) or ''))
end
