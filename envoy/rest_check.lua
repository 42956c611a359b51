-- Request checks for the yieldagent partner API.
--
-- Listed after grpc_json_transcoder, this filter sees a REST request once the
-- transcoder has resolved it: :path is the gRPC method now
-- (/yieldagent.v1.WalletService/Withdraw). rest.lua, listed before the
-- transcoder, left the REST path and the JSON body as the client sent them in
-- the stream's dynamic metadata ("yieldagent": path, body). This filter checks
-- them against the request schema, which edge.request_schema derives from the
-- protos and `yieldagent run` renders into the API route's metadata. It knows no
-- route itself.
--
-- It also leaves the method's REST hints (its success status, the JSON paths
-- printed as integers and as nulls; constant per method, from the schema) in the
-- stream's dynamic metadata ("hints"), where rest.lua shapes the reply with them.
--
-- A request it refuses gets a 422 listing each bad field ({loc, msg, type}),
-- rendered by rest.lua from the dynamic metadata key "errors"; nothing reaches
-- the service. It refuses:
--
--   * a JSON value of the wrong type. Each field takes the JSON type of its
--     proto type only: a string a string, an integer an integer literal, a
--     double a number, a bool true or false, a message an object, a repeated
--     field a list of such values. Amounts (json_integer strings) take an
--     integer or a string. null leaves a field unset. Protobuf's own JSON
--     parser is lenient (it reads "yes" and "1" as true, "compound" and
--     [["compound"]] as ["compound"]), and rest.lua quotes every integer
--     literal for the sake of amounts, so that without this check 1 would be
--     read as true and 5 as the string "5".
--   * malformed JSON (the transcoder refuses it too, but after its own,
--     more lenient reading of the types).
--   * a path or query value that is not UTF-8 once percent-decoded (protobuf
--     strings must be; the service would fail to decode the request), and a
--     query bool or integer it cannot read exactly (true/false/1/0, digits).
--
-- Headers go on to the service as gRPC metadata; the listener's grpc_metadata
-- filter has dropped those gRPC would refuse or read as its own. An idempotency
-- key that is not printable ASCII is refused here: dropped, the call would run
-- without it.
-- Unknown JSON fields and query parameters are left alone: the transcoder ignores
-- them.

local byte, sub, find, match, gmatch, gsub, lower, char =
  string.byte, string.sub, string.find, string.match, string.gmatch, string.gsub, string.lower,
  string.char
local concat, floor = table.concat, math.floor

local MAX_ERRORS = 10
local MAX_DEPTH = 64

local QUOTE, BACKSLASH, COLON, COMMA = 34, 92, 58, 44
local LBRACE, RBRACE, LBRACKET, RBRACKET = 123, 125, 91, 93

local REFUSALS = {
  string = { 'string_type', 'Input should be a valid string' },
  amount = { 'int_type', 'Input should be a valid integer' },
  integer = { 'int_type', 'Input should be a valid integer' },
  number = { 'float_type', 'Input should be a valid number' },
  bool = { 'bool_type', 'Input should be a valid boolean' },
  message = { 'dict_type', 'Input should be a valid dictionary' },
  map = { 'dict_type', 'Input should be a valid dictionary' },
  list = { 'list_type', 'Input should be a valid list' },
}

-- The schema, prepared once per worker: repeated fields get the type of one
-- element, message fields the message itself.
local schema

local function prepare(raw)
  local messages = raw.messages or {}
  local function resolve(spec)
    if spec.type == 'message' then spec.fields_of = messages[spec.message] end
    if spec.type == 'map' and spec.value then resolve(spec.value) end
    if spec.repeated then
      local element = {}
      for key, value in pairs(spec) do element[key] = value end
      element.repeated = nil
      spec.element = element
    end
  end
  for _, message in pairs(messages) do
    for _, spec in pairs(message.fields or {}) do resolve(spec) end
  end
  for _, method in pairs(raw.methods or {}) do
    method.fields_of = messages[method.message]
  end
  return raw
end

local function load_schema(handle)
  if schema then return schema end
  local raw = handle:metadata():get('request_schema')
  if raw == nil then return nil end -- not the API route
  schema = prepare(raw)
  return schema
end

-- UTF-8 as protobuf takes it: no overlong forms, no surrogates, up to U+10FFFF.
local function valid_utf8(s)
  if not find(s, '[\128-\255]') then return true end
  local i, n = 1, #s
  while i <= n do
    local c = byte(s, i)
    if c < 0x80 then
      i = i + 1
    else
      local size, low, high
      if c >= 0xC2 and c <= 0xDF then
        size, low, high = 2, 0x80, 0xBF
      elseif c >= 0xE0 and c <= 0xEF then
        size = 3
        low = c == 0xE0 and 0xA0 or 0x80
        high = c == 0xED and 0x9F or 0xBF
      elseif c >= 0xF0 and c <= 0xF4 then
        size = 4
        low = c == 0xF0 and 0x90 or 0x80
        high = c == 0xF4 and 0x8F or 0xBF
      else
        return false
      end
      if i + size - 1 > n then return false end
      local second = byte(s, i + 1)
      if second < low or second > high then return false end
      for k = i + 2, i + size - 1 do
        local b = byte(s, k)
        if b < 0x80 or b > 0xBF then return false end
      end
      i = i + size
    end
  end
  return true
end

local function percent_decode(s)
  return (gsub(s, '%%(%x%x)', function(h) return char(tonumber(h, 16)) end))
end

local function utf8_char(code)
  if code < 0x80 then return char(code) end
  if code < 0x800 then return char(0xC0 + floor(code / 64), 0x80 + code % 64) end
  return char(0xE0 + floor(code / 4096), 0x80 + floor(code / 64) % 64, 0x80 + code % 64)
end

-- Errors ------------------------------------------------------------------

local function refuse(state, loc, kind, message)
  local errors = state.errors
  if #errors >= MAX_ERRORS then return end
  local copy = {}
  for i = 1, #loc do copy[i] = loc[i] end
  errors[#errors + 1] = { loc = copy, msg = message, type = kind }
end

local function refuse_type(state, spec)
  local refusal = REFUSALS[spec.repeated and 'list' or spec.type]
  if refusal then refuse(state, state.loc, refusal[1], refusal[2]) end
end

local function syntax(state, what)
  error({ json = what .. ' at position ' .. state.pos }, 0)
end

-- JSON, read strictly (RFC 8259), checking each value against its field ---

local function skip_space(state)
  local _, e = find(state.text, '^[ \t\r\n]*', state.pos)
  state.pos = e + 1
end

local ESCAPES = { [34] = '"', [92] = '\\', [47] = '/', [98] = '\b', [102] = '\f',
  [110] = '\n', [114] = '\r', [116] = '\t' }

-- Reads the string whose opening quote is at state.pos; returns its text when
-- `decode` (object keys, to find their field).
local function read_string(state, decode)
  local text = state.text
  local i, start = state.pos + 1, state.pos + 1
  local parts, n = {}, 0
  while true do
    local q = find(text, '[%z\1-\31"\\]', i)
    if not q then
      state.pos = #text + 1
      syntax(state, 'unterminated string')
    end
    local c = byte(text, q)
    if c == QUOTE then
      state.pos = q + 1
      if not decode then return nil end
      n = n + 1; parts[n] = sub(text, start, q - 1)
      return concat(parts)
    elseif c == BACKSLASH then
      local e = byte(text, q + 1)
      local piece
      if e == 117 then -- \uXXXX
        local hex = match(text, '^%x%x%x%x', q + 2)
        if not hex then
          state.pos = q
          syntax(state, 'invalid \\u escape')
        end
        piece = utf8_char(tonumber(hex, 16))
        i = q + 6
      elseif e and ESCAPES[e] then
        piece = ESCAPES[e]
        i = q + 2
      else
        state.pos = q
        syntax(state, 'invalid escape')
      end
      if decode then
        n = n + 1; parts[n] = sub(text, start, q - 1)
        n = n + 1; parts[n] = piece
      end
      start = i
    else
      state.pos = q
      syntax(state, 'control character in string')
    end
  end
end

-- Reads the number at state.pos; returns whether it is an integer, and its text.
local function read_number(state)
  local text, s = state.text, state.pos
  local _, e = find(text, '^%-?0', s)
  if not e then _, e = find(text, '^%-?[1-9]%d*', s) end
  if not e then syntax(state, 'invalid number') end
  local integer = true
  local _, f = find(text, '^%.%d+', e + 1)
  if f then e, integer = f, false end
  _, f = find(text, '^[eE][+-]?%d+', e + 1)
  if f then e, integer = f, false end
  state.pos = e + 1
  return integer, sub(text, s, e)
end

local function check_number(state, spec, integer, literal)
  if spec.type == 'any' then return end
  if spec.repeated then return refuse_type(state, spec) end
  if spec.type == 'number' then
    local value = tonumber(literal)
    if value ~= value or value == math.huge or value == -math.huge then
      refuse(state, state.loc, 'finite_number', 'Input should be a finite number')
    end
  elseif spec.type == 'integer' or spec.type == 'amount' then
    if not integer then
      refuse(state, state.loc, 'int_from_float',
        'Input should be a valid integer, got a number with a fractional part')
    end
  else
    refuse_type(state, spec)
  end
end

local read_value

local function read_object(state, spec, depth)
  local fields, values
  if spec then
    if spec.repeated then
      refuse_type(state, spec)
    elseif spec.type == 'message' then
      fields = spec.fields_of
    elseif spec.type == 'map' then
      values = spec.value
    elseif spec.type ~= 'any' then
      refuse_type(state, spec)
    end
  end
  local text, loc = state.text, state.loc
  state.pos = state.pos + 1
  skip_space(state)
  if byte(text, state.pos) == RBRACE then
    state.pos = state.pos + 1
    return
  end
  while true do
    skip_space(state)
    if byte(text, state.pos) ~= QUOTE then syntax(state, 'expected a key') end
    local key = read_string(state, fields ~= nil or values ~= nil)
    skip_space(state)
    if byte(text, state.pos) ~= COLON then syntax(state, "expected ':'") end
    state.pos = state.pos + 1
    local child, name
    if fields then
      name = fields.names and fields.names[key]
      child = name and fields.fields[name]
    elseif values then
      name, child = key, values
    end
    loc[#loc + 1] = name or key
    read_value(state, child, depth + 1, values ~= nil)
    loc[#loc] = nil
    skip_space(state)
    local c = byte(text, state.pos)
    state.pos = state.pos + 1
    if c == RBRACE then return end
    if c ~= COMMA then
      state.pos = state.pos - 1
      syntax(state, "expected ',' or '}'")
    end
  end
end

local function read_array(state, spec, depth)
  local element
  if spec then
    if spec.repeated then
      element = spec.element
    elseif spec.type ~= 'any' then
      refuse_type(state, spec)
    end
  end
  local text, loc = state.text, state.loc
  state.pos = state.pos + 1
  skip_space(state)
  if byte(text, state.pos) == RBRACKET then
    state.pos = state.pos + 1
    return
  end
  local index = 0
  while true do
    loc[#loc + 1] = index
    read_value(state, element, depth + 1, true)
    loc[#loc] = nil
    index = index + 1
    skip_space(state)
    local c = byte(text, state.pos)
    state.pos = state.pos + 1
    if c == RBRACKET then return end
    if c ~= COMMA then
      state.pos = state.pos - 1
      syntax(state, "expected ',' or ']'")
    end
  end
end

-- Reads one value; `spec` is its field type (nil: unknown, not checked).
-- `item`: a list element or map value, which may not be null.
read_value = function(state, spec, depth, item)
  if depth > MAX_DEPTH then syntax(state, 'nesting too deep') end
  skip_space(state)
  local text, pos = state.text, state.pos
  local c = byte(text, pos)
  if c == LBRACE then
    read_object(state, spec, depth)
  elseif c == LBRACKET then
    read_array(state, spec, depth)
  elseif c == QUOTE then
    read_string(state, false)
    if spec and spec.type ~= 'any' and (spec.repeated
        or (spec.type ~= 'string' and spec.type ~= 'amount')) then
      refuse_type(state, spec)
    end
  elseif c == 116 or c == 102 then -- true, false
    local literal = c == 116 and 'true' or 'false'
    if sub(text, pos, pos + #literal - 1) ~= literal then syntax(state, 'invalid literal') end
    state.pos = pos + #literal
    if spec and spec.type ~= 'any' and (spec.repeated or spec.type ~= 'bool') then
      refuse_type(state, spec)
    end
  elseif c == 110 then -- null: the field stays unset
    if sub(text, pos, pos + 3) ~= 'null' then syntax(state, 'invalid literal') end
    state.pos = pos + 4
    if item and spec and spec.type ~= 'any' then refuse_type(state, spec) end
  elseif c == 45 or (c and c >= 48 and c <= 57) then
    local integer, literal = read_number(state)
    if spec then check_number(state, spec, integer, literal) end
  elseif c == nil then
    syntax(state, 'unexpected end of input')
  else
    syntax(state, 'unexpected character')
  end
end

local function check_body(state, method, body)
  if not find(body, '[^ \t\r\n]') then return end -- no body: an empty message
  local root
  if method.body == '' or method.body == '*' then
    -- The transcoder reads a body sent to a call that takes none as its fields.
    root = { type = 'message', fields_of = method.fields_of }
  else
    root = method.fields_of.fields[method.body]
  end
  state.text, state.pos, state.loc = body, 1, { 'body' }
  local ok, failure = pcall(function()
    read_value(state, root, 0, false)
    skip_space(state)
    if state.pos <= #body then syntax(state, 'extra data after the JSON value') end
  end)
  if not ok then
    if type(failure) ~= 'table' then error(failure, 0) end
    state.errors = { { loc = { 'body' }, msg = 'JSON decode error: ' .. failure.json,
      type = 'json_invalid' } }
  end
end

-- Path and query ------------------------------------------------------------

local function check_text(state, spec, value, loc)
  local kind = spec.type
  if kind == 'string' or kind == 'amount' then
    if not valid_utf8(value) then
      refuse(state, loc, 'string_unicode',
        'Input should be a valid string, unable to parse raw data as a unicode string')
    end
  elseif kind == 'bool' then
    local word = lower(value)
    if word ~= 'true' and word ~= 'false' and word ~= '1' and word ~= '0' then
      refuse(state, loc, 'bool_parsing', 'Input should be a valid boolean, unable to interpret input')
    end
  elseif kind == 'integer' then
    if not find(value, '^%-?%d+$') then
      refuse(state, loc, 'int_parsing',
        'Input should be a valid integer, unable to parse string as an integer')
    end
  end
end

-- The path's values by field, from the http rule's template
-- ("/api/v1/{chain_id}/wallets/{wallet}:withdraw").
local function path_values(template, path)
  local verb = match(template, '(:[^/}]+)$')
  if verb and sub(path, -#verb) == verb then path = sub(path, 1, -#verb - 1) end
  if verb then template = sub(template, 1, -#verb - 1) end
  local wanted, actual = {}, {}
  for segment in gmatch(template, '[^/]+') do wanted[#wanted + 1] = segment end
  for segment in gmatch(path, '[^/]+') do actual[#actual + 1] = segment end
  local values = {}
  if #wanted ~= #actual then return values end
  for i, segment in ipairs(wanted) do
    local name = match(segment, '^{([%w_]+)}$')
    if name then values[name] = actual[i] end
  end
  return values
end

local function check_path_and_query(state, method, request_path)
  local fields = method.fields_of
  local path, query = match(request_path, '^([^?]*)%??(.*)$')
  local bound = path_values(method.template, path)
  for name, raw in pairs(bound) do
    local spec = fields.fields[name]
    if spec then check_text(state, spec, percent_decode(raw), { 'path', name }) end
  end
  -- The transcoder binds query parameters to fields even where the body is "*".
  for pair in gmatch(query, '[^&]+') do
    local key, value = match(pair, '^([^=]*)=?(.*)$')
    local name = fields.names[percent_decode(key)]
    local spec = name and name ~= method.body and not bound[name] and fields.fields[name]
    if spec and not spec.repeated then
      check_text(state, spec, percent_decode(value), { 'query', name })
    end
  end
end

-- Headers -------------------------------------------------------------------

-- The service takes an idempotency key of 1 to 255 printable ASCII characters.
local function printable(value)
  return not find(value, '[^\32-\126]')
end

-- What to answer instead of passing the request on: a status, or nothing.
local function check(handle)
  local headers = handle:headers()
  local meta = handle:streamInfo():dynamicMetadata():get('yieldagent')
  local original = meta and meta.path
  local grpc_path = headers:get(':path')
  -- Only requests the transcoder turned into a gRPC call (no other reaches the service).
  if not original or original == grpc_path then return nil end

  -- The service reads neither; the REST path may be long.
  headers:remove('x-envoy-original-path')
  headers:remove('x-envoy-original-method')
  local state = { errors = {} }
  -- A key the client sent must never be dropped silently: the call would run without it.
  local key = headers:get('idempotency-key')
  if key and not printable(key) then
    refuse(state, { 'header', 'Idempotency-Key' }, 'value_error.idempotency_key',
      'Idempotency-Key must be 1 to 255 printable ASCII characters')
  end

  local rules = load_schema(handle)
  local method = rules and rules.methods and rules.methods[grpc_path]
  if method and method.hints and next(method.hints) then
    -- How rest.lua shapes the method's success (status, JSON integers and nulls).
    handle:streamInfo():dynamicMetadata():set('yieldagent', 'hints', method.hints)
  end
  if #state.errors > 0 then
    handle:streamInfo():dynamicMetadata():set('yieldagent', 'errors', state.errors)
    return '422'
  end
  if not method or not method.fields_of then return nil end

  check_path_and_query(state, method, original)
  if #state.errors == 0 and meta.body then check_body(state, method, meta.body) end
  if #state.errors == 0 then return nil end
  handle:streamInfo():dynamicMetadata():set('yieldagent', 'errors', state.errors)
  return '422'
end

function envoy_on_request(handle)
  local ok, status = pcall(check, handle)
  if not ok then
    -- A bug here must not take the API down: the transcoder and the service
    -- still check everything that matters.
    handle:logErr('rest_check: ' .. tostring(status))
    return
  end
  if status then
    handle:respond({ [':status'] = status }, '')
  end
end
