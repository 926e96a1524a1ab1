-- service.lua — wrk script of tests/bench/service.py: every request POSTs one pre-built
-- multipart/form-data body to /v1/filter; at the end one machine-readable line (EDGED_WRK ...).
-- usage: wrk ... -s tests/bench/service.lua URL -- BODY_FILE CONTENT_TYPE

local function slurp(path)
   local f = assert(io.open(path, "rb"), "cannot open body file " .. tostring(path))
   local data = f:read("*a")
   f:close()
   return data
end

-- Runs in each wrk thread before wrk.format() builds the request it then repeats.
function init(args)
   wrk.method = "POST"
   wrk.path = "/v1/filter"
   wrk.body = slurp(args[1])
   wrk.headers["Content-Type"] = args[2]
end

-- Latencies in microseconds; status counts answers >= 400 (wrk's "Non-2xx or 3xx responses").
function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      "EDGED_WRK requests=%d duration_us=%d bytes=%d p50_us=%d p99_us=%d mean_us=%.0f max_us=%d "
         .. "status=%d connect=%d read=%d write=%d timeout=%d\n",
      summary.requests, summary.duration, summary.bytes, latency:percentile(50), latency:percentile(99),
      latency.mean, latency.max, e.status, e.connect, e.read, e.write, e.timeout))
end
