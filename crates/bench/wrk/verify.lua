-- wrk script for scripts/bench-http: POST /v2/verify/bank by payload with checkDuplicate: true.
-- Environment:
--   BENCH_PAYLOADS  file with one slip QR payload per line (required)
--   BENCH_API_KEY   branch API key sent as "Authorization: Bearer ..." (required; the bare
--                   endpoint ignores it, but receives the same bytes)
-- Each thread pre-builds one request per payload and rotates through them, starting at a
-- different offset per thread so concurrent requests hit different slips.
-- done() prints machine-readable "BENCH key=value" lines that the script parses.

local counter = 0
local threads = {}

function setup(thread)
  counter = counter + 1
  thread:set("tid", counter)
  table.insert(threads, thread)
end

local requests = {}
local idx = 0

function init(args)
  local file = os.getenv("BENCH_PAYLOADS")
  local key = os.getenv("BENCH_API_KEY")
  assert(file and key, "BENCH_PAYLOADS and BENCH_API_KEY must be set")
  local headers = {
    ["Authorization"] = "Bearer " .. key,
    ["Content-Type"] = "application/json",
  }
  for line in io.lines(file) do
    if #line > 0 then
      -- Payloads are EMVCo digits/letters: nothing to escape in JSON.
      local body = '{"payload":"' .. line .. '","checkDuplicate":true}'
      table.insert(requests, wrk.format("POST", "/v2/verify/bank", headers, body))
    end
  end
  assert(#requests > 0, "no payloads in " .. file)
  idx = ((tid or 1) * 7919) % #requests
end

function request()
  idx = idx % #requests + 1
  return requests[idx]
end

function done(summary, latency, requests_)
  local secs = summary.duration / 1e6
  local e = summary.errors
  io.write(string.format("BENCH requests=%d\n", summary.requests))
  io.write(string.format("BENCH seconds=%.3f\n", secs))
  io.write(string.format("BENCH rps=%.1f\n", summary.requests / secs))
  io.write(string.format("BENCH p50_ms=%.3f\n", latency:percentile(50) / 1000))
  io.write(string.format("BENCH p99_ms=%.3f\n", latency:percentile(99) / 1000))
  io.write(string.format("BENCH max_ms=%.3f\n", latency.max / 1000))
  -- wrk counts every status > 399 in errors.status; the service answers 200 or 4xx/5xx.
  io.write(string.format("BENCH status_errors=%d\n", e.status))
  io.write(string.format("BENCH socket_errors=%d\n", e.connect + e.read + e.write + e.timeout))
end
