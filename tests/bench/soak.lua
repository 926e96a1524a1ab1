-- soak.lua — wrk script of tests/bench/soak.py: every request POSTs one pre-built multipart body to
-- /v1/filter. With RATE > 0 the arrivals are paced: each wrk thread keeps a schedule of RATE
-- requests a second (the caller divides the whole rate among the threads), and a connection that is free waits for the next due time (delay()), so the
-- offered rate does not follow the server's latency as a closed loop's does. A thread that falls
-- more than 0.1 s behind drops the missed arrivals (counted as lags) instead of sending a burst.
-- At the end one machine-readable line: EDGED_SOAK requests=... codes=200:N,429:N ...
-- usage: wrk -t T -c C ... -s tests/bench/soak.lua URL -- BODY_FILE CONTENT_TYPE RATE_PER_THREAD
local ffi = require("ffi")
ffi.cdef [[
struct edged_timespec { long tv_sec; long tv_nsec; };
int clock_gettime(int clk, struct edged_timespec *ts);
]]
local ts = ffi.new("struct edged_timespec")

local function now_s()
   ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
   return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local function slurp(path)
   local f = assert(io.open(path, "rb"), "cannot open body file " .. tostring(path))
   local data = f:read("*a")
   f:close()
   return data
end

local threads = {}

-- The percentiles done() reports: every 1 %, then finer in the tail.
QUANTILES = {}
for p = 1, 99 do
   table.insert(QUANTILES, p)
end
for _, p in ipairs({99.2, 99.4, 99.6, 99.8, 99.9, 99.95, 99.99, 100}) do
   table.insert(QUANTILES, p)
end

-- Runs in the main state once per thread before they start: done() reads their counts.
function setup(thread)
   table.insert(threads, thread)
end

-- Per thread (globals, so that done() can read them): status counts and arrivals dropped.
codes, lags = {}, 0
local period, due = 0, 0

function init(args)
   wrk.method = "POST"
   wrk.path = "/v1/filter"
   wrk.body = slurp(args[1])
   wrk.headers["Content-Type"] = args[2]
   local rate = tonumber(args[3]) or 0
   if rate > 0 then
      period = 1 / rate
   end
   due = now_s()
end

function delay()
   if period == 0 then
      return 0
   end
   local t = now_s()
   if t - due > 0.1 then
      lags = lags + 1
      due = t
   end
   local wait = due - t
   due = due + period
   return wait > 0 and math.floor(wait * 1000 + 0.5) or 0
end

function response(status, headers, body)
   codes[status] = (codes[status] or 0) + 1
end

function done(summary, latency, requests)
   local all, nlags = {}, 0
   for _, t in ipairs(threads) do
      local c = t:get("codes")
      for k, v in pairs(c) do
         all[k] = (all[k] or 0) + v
      end
      nlags = nlags + (t:get("lags") or 0)
   end
   local parts = {}
   for k, v in pairs(all) do
      table.insert(parts, string.format("%d:%d", k, v))
   end
   local e = summary.errors
   io.write(string.format(
      "EDGED_SOAK requests=%d duration_us=%d p50_us=%d p99_us=%d max_us=%d codes=%s connect=%d read=%d "
         .. "write=%d timeout=%d lags=%d\n",
      summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency.max,
      table.concat(parts, ","), e.connect, e.read, e.write, e.timeout, nlags))
   -- the latency distribution as quantiles (us), so that runs in pieces can be merged
   local q = {}
   for _, p in ipairs(QUANTILES) do
      table.insert(q, string.format("%d", p >= 100 and latency.max or latency:percentile(p)))
   end
   io.write("EDGED_SOAK_Q " .. table.concat(q, ",") .. "\n")
end
