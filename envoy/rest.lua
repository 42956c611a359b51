-- REST shaping for the yieldagent partner API.
--
-- Envoy's grpc_json_transcoder turns REST into gRPC and back. This filter,
-- listed before it, closes the gaps between protobuf's JSON and the partner
-- contract. It knows no route: the gRPC service decides, per response, through
-- these response headers (metadata), which it sends only to this edge:
--
--   x-yieldagent-status    HTTP status to answer (422, 409, ...)
--   x-yieldagent-error     the complete JSON error body ({"detail": ...})
--
-- A success is shaped by its method's hints, which rest_check.lua leaves in the
-- stream's dynamic metadata ("hints"): the status (201, 204), the JSON paths
-- ("deposits.amount") whose decimal-string values are printed as JSON integers,
-- and those printed as null when the field is unset. They are constant per method
-- and come from the request schema, so that the service sends no metadata on a
-- success (the x-yieldagent-* headers of the same names still count when sent).
-- The wallet read comes shaped: the service renders its JSON itself
-- (servicers/rest_json.py), and the schema gives it no integer or null hints.
--
-- On requests, every JSON integer literal in a body is passed on as a string:
-- protobuf's JSON parser reads a quoted integer into any numeric field, and this
-- lets arbitrary-precision amounts (decimal-string fields) arrive as numbers.
--
-- A gRPC content type of any flavour is normalized to application/grpc, which the
-- transcoder passes by; the route answers 415 (this port serves no gRPC).
--
-- rest_check.lua, listed after the transcoder, checks each request against the
-- protos' types. It reads the REST path and the body as sent from the stream's
-- dynamic metadata ("yieldagent": path, body), which this filter records, and
-- leaves the fields it refuses there ("errors"), which this filter renders as a
-- 422. A body sent with GET (or any method but POST, PUT and PATCH) is dropped:
-- the transcoder would otherwise read it as the call's fields.
--
-- Every error body (the service's and Envoy's alike) gets the request's id next to
-- its detail: {"detail": ..., "request_id": "<x-request-id>"}. This is the one place
-- that adds it; the id is recorded from the request headers (Envoy sets one on every
-- request) into the stream's dynamic metadata ("yieldagent": request_id).
--
-- Errors Envoy and the transcoder raise themselves (unknown path or method,
-- malformed JSON, a value of the wrong type, headers too large) come as plain
-- text; they are rewritten to {"detail": ...}, with a 422 and the field's
-- location for input errors. Every text is cut as the service cuts it (the first
-- 200 and last 100 characters around an ellipsis) and made valid UTF-8. No
-- grpc-* header and no x-yieldagent-* header reaches a REST client; other
-- response headers (retry-after, say) pass.

local byte, sub, find, gsub, concat = string.byte, string.sub, string.find, string.gsub, table.concat

local QUOTE, BACKSLASH = 34, 92
local LBRACE, RBRACE, LBRACKET, RBRACKET, COMMA = 123, 125, 91, 93, 44

-- Index of the closing quote of the JSON string whose opening quote is at s.
local function string_end(text, s)
  local i = s + 1
  while true do
    local q = find(text, '"', i, true)
    if not q then return #text end
    local b = q - 1
    while byte(text, b) == BACKSLASH do b = b - 1 end
    if (q - 1 - b) % 2 == 0 then return q end
    i = q + 1
  end
end

-- Error texts echo input: the first 200 and last 100 bytes around an ellipsis,
-- as servicers/errors.py cuts them.
local ECHO_HEAD, ECHO_TAIL = 200, 100

local function cut(value)
  if #value <= ECHO_HEAD + 3 + ECHO_TAIL then return value end
  return sub(value, 1, ECHO_HEAD) .. '\226\128\166' .. sub(value, -ECHO_TAIL)
end

-- `value` with each byte that is not part of valid UTF-8 replaced by U+FFFD.
local function valid_utf8(value)
  if not find(value, '[\128-\255]') then return value end
  local out, n, i, len = {}, 0, 1, #value
  while i <= len do
    local c, size, low, high = byte(value, i), 0, 0x80, 0xBF
    if c < 0x80 then
      size = 1
    elseif c >= 0xC2 and c <= 0xDF then
      size = 2
    elseif c >= 0xE0 and c <= 0xEF then
      size = 3
      if c == 0xE0 then low = 0xA0 elseif c == 0xED then high = 0x9F end
    elseif c >= 0xF0 and c <= 0xF4 then
      size = 4
      if c == 0xF0 then low = 0x90 elseif c == 0xF4 then high = 0x8F end
    end
    local good = size > 0 and i + size - 1 <= len
    if good and size > 1 then
      local second = byte(value, i + 1)
      good = second >= low and second <= high
      for k = i + 2, i + size - 1 do
        local b = byte(value, k)
        if b < 0x80 or b > 0xBF then good = false end
      end
    end
    n = n + 1
    if good then
      out[n] = sub(value, i, i + size - 1)
      i = i + size
    else
      out[n] = '\239\191\189' -- U+FFFD
      i = i + 1
    end
  end
  return concat(out)
end

local function json_string(value)
  value = gsub(valid_utf8(cut(value)), '[%c"\\]', function(c)
    if c == '"' then return '\\"' end
    if c == '\\' then return '\\\\' end
    if c == '\n' then return '\\n' end
    return string.format('\\u%04x', byte(c))
  end)
  return '"' .. value .. '"'
end

local function detail(message)
  return '{"detail":' .. json_string(message) .. '}'
end

-- Hint headers are constant per method: parse each distinct value once.
local integer_sets, null_sets = {}, {}

local function integer_set(spec)
  local set = integer_sets[spec]
  if set then return set end
  set = {}
  for path in string.gmatch(spec, '[^,]+') do set[path] = true end
  integer_sets[spec] = set
  return set
end

-- "a,b.c" -> { [""] = {"a"}, ["b"] = {"c"} }: keys each object path must carry.
local function null_set(spec)
  local set = null_sets[spec]
  if set then return set end
  set = {}
  for path in string.gmatch(spec, '[^,]+') do
    local parent, key = string.match(path, '^(.*)%.([^.]+)$')
    if not parent then parent, key = '', path end
    local keys = set[parent]
    if not keys then keys = {}; set[parent] = keys end
    keys[#keys + 1] = key
  end
  null_sets[spec] = set
  return set
end

-- Rewrites a transcoded JSON body: unquotes integers, adds missing nulls.
-- Arrays are transparent in paths: the items of "deposits" live at "deposits".
local function reshape(text, integers, nulls)
  local out, n, copied = {}, 0, 1
  local frames, depth = {}, 0
  local pos = 1
  while true do
    local s = find(text, '[{}%[%]",]', pos)
    if not s then break end
    local c = byte(text, s)
    local top = frames[depth]
    if c == QUOTE then
      local e = string_end(text, s)
      if top and top.object and top.expect_key then
        top.key = sub(text, s + 1, e - 1)
        top.expect_key = false
        top.count = top.count + 1
        if top.seen then top.seen[top.key] = true end
      elseif top then
        local path = top.object and top.prefix .. top.key or top.path
        if integers and integers[path] and find(text, '^%-?%d+"', s + 1) then
          n = n + 1; out[n] = sub(text, copied, s - 1)
          n = n + 1; out[n] = sub(text, s + 1, e - 1)
          copied = e + 1
        end
      end
      pos = e + 1
    elseif c == LBRACE or c == LBRACKET then
      local path = ''
      if top then path = top.object and top.prefix .. top.key or top.path end
      depth = depth + 1
      local frame = { object = c == LBRACE, path = path, expect_key = c == LBRACE, count = 0 }
      frame.prefix = path == '' and '' or path .. '.'
      if frame.object and nulls and nulls[path] then frame.seen = {} end
      frames[depth] = frame
      pos = s + 1
    elseif c == RBRACE or c == RBRACKET then
      if top and top.seen then
        for _, key in ipairs(nulls[top.path]) do
          if not top.seen[key] then
            n = n + 1; out[n] = sub(text, copied, s - 1)
            n = n + 1; out[n] = (top.count > 0 and ',"' or '"') .. key .. '":null'
            copied = s
            top.count = top.count + 1
          end
        end
      end
      frames[depth] = nil
      depth = depth - 1
      pos = s + 1
    else -- comma
      if top and top.object then top.expect_key = true end
      pos = s + 1
    end
  end
  if copied == 1 then return text end
  n = n + 1; out[n] = sub(text, copied)
  return concat(out)
end

-- Quotes every integer literal outside strings: {"amount": 5} -> {"amount": "5"}.
local function quote_integers(text)
  local out, n, copied = {}, 0, 1
  local pos = 1
  while true do
    local s = find(text, '[%-%d"]', pos)
    if not s then break end
    if byte(text, s) == QUOTE then
      pos = string_end(text, s) + 1
    else
      local _, e = find(text, '^%-?%d+', s)
      if not e then
        pos = s + 1
      else
        local after = byte(text, e + 1)
        if after == 46 or after == 101 or after == 69 then -- a fraction or exponent follows
          local _, f = find(text, '^[%d.eE+%-]*', e + 1)
          pos = f + 1
        else
          n = n + 1; out[n] = sub(text, copied, s - 1)
          n = n + 1; out[n] = '"' .. sub(text, s, e) .. '"'
          copied = e + 1
          pos = e + 1
        end
      end
    end
  end
  if copied == 1 then return text end
  n = n + 1; out[n] = sub(text, copied)
  return concat(out)
end

local function unescape_percent(value)
  return (gsub(value, '%%(%x%x)', function(h) return string.char(tonumber(h, 16)) end))
end

-- Where a transcoder input error points: the query, the path, or the body.
local function error_location(field, value, request_path)
  local first = string.match(field, '^[^.%[]+')
  local query = string.match(request_path, '%?(.*)$')
  if query and find('&' .. query, '&' .. first .. '=', 1, true) then return 'query' end
  if value and (find(request_path, '/' .. value, 1, true)
      or find(unescape_percent(request_path), '/' .. value, 1, true)) then
    return 'path'
  end
  return 'body'
end

local function loc_json(kind, field)
  local parts = { json_string(kind) }
  for name, index in string.gmatch(field, '([^.%[%]]+)%[?(%d*)%]?') do
    parts[#parts + 1] = json_string(name)
    if index ~= '' then parts[#parts + 1] = index end
  end
  return '[' .. concat(parts, ',') .. ']'
end

-- The plain-text errors of Envoy and the transcoder, as the contract's error
-- bodies. `seen`: whether this filter saw the request (a request the HTTP parser
-- refuses never reaches the filters).
local function plain_text_error(status, text, request_path, seen)
  text = string.match(text, '^[^\n]*') or ''
  if status == '404' then return '404', detail('Not Found') end
  if status == '400' and not seen then return '400', detail('Bad Request') end
  if status == '400' then
    local field, message = string.match(text, '^([%w_.%[%]]+): (.*)$')
    if field then
      local value = string.match(message, 'invalid value "?([^"]*)"? for type')
      local kind = error_location(field, value, request_path)
      return '422', '{"detail":[{"loc":' .. loc_json(kind, field) .. ',"msg":'
        .. json_string(message) .. ',"type":"type_error"}]}'
    end
    return '422', '{"detail":[{"loc":["body"],"msg":' .. json_string('JSON decode error: ' .. text)
      .. ',"type":"json_invalid"}]}'
  end
  if status == '503' then return '503', detail('Service unavailable') end
  return status, detail(text)
end

-- The fields rest_check.lua refused, as a 422 body.
local function errors_body(errors)
  local items = {}
  for i, item in ipairs(errors) do
    local loc = {}
    for j, part in ipairs(item.loc) do
      loc[j] = type(part) == 'number' and string.format('%d', part) or json_string(tostring(part))
    end
    items[i] = '{"loc":[' .. concat(loc, ',') .. '],"msg":' .. json_string(item.msg)
      .. ',"type":' .. json_string(item.type) .. '}'
  end
  return '{"detail":[' .. concat(items, ',') .. ']}'
end

local function read_body(handle)
  local body = handle:body(true)
  return body:getBytes(0, body:length())
end

local HIDDEN = {
  'grpc-status', 'grpc-message', 'grpc-status-details-bin', 'grpc-accept-encoding', 'grpc-encoding',
  'x-envoy-upstream-service-time', 'x-yieldagent-status', 'x-yieldagent-integers',
  'x-yieldagent-nulls', 'x-yieldagent-error',
}

local REASONS = {
  ['400'] = 'Bad Request', ['404'] = 'Not Found', ['405'] = 'Method Not Allowed',
  ['408'] = 'Request Timeout', ['411'] = 'Length Required', ['413'] = 'Payload Too Large',
  ['414'] = 'URI Too Long', ['415'] = 'Unsupported Media Type', ['426'] = 'Upgrade Required',
  ['431'] = 'Request Header Fields Too Large',
}

local GRPC_TO_HTTP = {
  ['3'] = '400', ['4'] = '504', ['5'] = '404', ['7'] = '403', ['8'] = '429', ['9'] = '409',
  ['12'] = '404', ['14'] = '503', ['16'] = '401',
}

local TAKES_BODY = { POST = true, PUT = true, PATCH = true }

function envoy_on_request(handle)
  local headers = handle:headers()
  local method = headers:get(':method')
  local metadata = handle:streamInfo():dynamicMetadata()
  metadata:set('yieldagent', 'path', headers:get(':path'))
  metadata:set('yieldagent', 'method', method)
  local request_id = headers:get('x-request-id')
  if request_id then metadata:set('yieldagent', 'request_id', request_id) end
  local content_type = headers:get('content-type')
  if content_type and find(string.lower(content_type), '^application/grpc') then
    -- Every gRPC flavour (gRPC-Web, any letter case) as the transcoder knows gRPC,
    -- so that it passes them by, to the route that answers 415 (404 off /api/v1/).
    headers:replace('content-type', 'application/grpc')
    return
  end
  if headers:get('content-length') == '0' then return end
  local body = handle:body()
  if not body or body:length() == 0 then return end
  if not TAKES_BODY[method] then
    body:setBytes('')
    handle:headers():replace('content-length', '0')
    return
  end
  local text = body:getBytes(0, body:length())
  -- Wrappers taken before handle:body() are stale once it returns.
  handle:streamInfo():dynamicMetadata():set('yieldagent', 'body', text)
  local quoted = quote_integers(text)
  if quoted ~= text then
    body:setBytes(quoted)
    handle:headers():replace('content-length', tostring(#quoted))
  end
end

function envoy_on_response(handle)
  local headers = handle:headers()
  local status = headers:get(':status')
  local wanted = headers:get('x-yieldagent-status')
  local error_body = headers:get('x-yieldagent-error')
  local grpc_status = headers:get('grpc-status')
  local grpc_message = headers:get('grpc-message')
  local content_type = headers:get('content-type') or ''
  local integers = headers:get('x-yieldagent-integers')
  local nulls = headers:get('x-yieldagent-nulls')

  local meta = handle:streamInfo():dynamicMetadata():get('yieldagent')
  local hints = meta and meta.hints
  if hints and status == '200' and not error_body and not meta.errors
      and (not grpc_status or grpc_status == '0') and find(content_type, 'json', 1, true) then
    -- A success of the method rest_check.lua named: shaped by its hints.
    wanted = wanted or hints.status
    integers = integers or hints.integers
    nulls = nulls or hints.nulls
  end
  local new_status, new_body = wanted, nil
  if meta and meta.errors then
    new_status, new_body = '422', errors_body(meta.errors)
  elseif error_body then
    new_status, new_body = wanted or status, error_body
  elseif grpc_status and grpc_status ~= '0' then
    -- A failure outside the service's error mapping: gRPC's own, or Envoy's
    -- answer to a gRPC request (which it words in gRPC, with HTTP 200; the route
    -- names the status). Its HTTP status, and no internals for a 500.
    new_status = wanted or (status == '200' and (GRPC_TO_HTTP[grpc_status] or '500') or status)
    new_body = detail(new_status == '500' and 'Internal server error'
      or unescape_percent(grpc_message or ''))
  elseif wanted == '204' then
    new_body = ''
  elseif find(content_type, 'text/plain', 1, true) then
    new_status, new_body = plain_text_error(
      wanted or status, read_body(handle), meta and meta.path or '', meta ~= nil)
  elseif not wanted and tonumber(status) >= 400 and content_type == ''
      and read_body(handle) == '' then
    -- Envoy's bare refusals (a request line it cannot read, say).
    new_body = detail(REASONS[status] or 'Error')
  elseif integers or nulls then
    local text = read_body(handle)
    local shaped = reshape(text, integers and integer_set(integers), nulls and null_set(nulls))
    if shaped ~= text then new_body = shaped end
  end

  if new_body and new_body ~= '' and meta and meta.request_id
      and tonumber(new_status or status) >= 400 and byte(new_body, -1) == RBRACE then
    new_body = sub(new_body, 1, -2) .. ',"request_id":' .. json_string(meta.request_id) .. '}'
  end
  if new_body and meta and meta.method == 'HEAD' then
    new_body = nil -- a response to HEAD has no body
  end
  if new_body then handle:body(true):setBytes(new_body) end
  headers = handle:headers() -- touching the body may rebuild the header map
  for _, name in ipairs(HIDDEN) do headers:remove(name) end
  if new_status and new_status ~= status then headers:replace(':status', new_status) end
  if new_body then
    if new_body == '' then
      headers:remove('content-type')
    else
      headers:replace('content-type', 'application/json')
    end
    headers:replace('content-length', tostring(#new_body))
  end
end
