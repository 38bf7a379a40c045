#!/usr/bin/env bash
# One device call (scripts/device-bin.sh first, then carry device-bin): where the
# agent's CPU goes on a real H200, thread by thread, at 100 ms and 1 s, idle and under a bf16
# GEMM, beside `nvidia-smi -lms`; NVML call costs, whether the power fields are fresh, and the
# GPM units. Results go to $OUT.
set -u
. "$PWD/scripts/device-lib.sh"
B=./device-bin/burnin
O=${OUT:-/tmp/out}
mkdir -p "$O"
nproc > "$O/nproc.txt"; ls -la /usr/sbin/sshd /usr/bin/ssh >> "$O/nproc.txt" 2>&1
$B agent --probe-costs > "$O/probe-costs.txt" 2>&1
MODERN=index,uuid,name,power.draw.average,power.draw.instant,enforced.power.limit,temperature.gpu,utilization.gpu,clocks.current.sm,clocks.max.sm,clocks.current.memory,memory.used,memory.total,clocks_event_reasons.active,ecc.errors.corrected.volatile.total,ecc.errors.uncorrected.volatile.total
measure() { # $1 = label: agent at 100 ms and 1 s, nvidia-smi -lms 100, side by side for 40 s
  TIMEFORMAT='%U %S'
  ( time timeout 40 nvidia-smi --query-gpu=$MODERN --format=csv,noheader,nounits -lms 100 > /dev/null ) 2> "$O/smi-lms100-$1.cpu" &
  $B agent --interval 100ms --frames 400 --stats > "$O/agent-100ms-$1.ndjson" 2> "$O/agent-100ms-$1.stats" &
  $B agent --interval 1s --frames 40 --stats > /dev/null 2> "$O/agent-1s-$1.stats" &
  wait
}
# The tick path split (its clock reads cost a little, so apart from the headline runs).
split() {
  $B agent --interval 100ms --frames 200 --stats --stats-split > /dev/null 2> "$O/agent-100ms-split-$1.stats"
}
# The console's decode+store on this host's CPU (no GPU needed), three times: the host's
# figures vary from run to run.
for k in 1 2 3; do $B bench ingest > "$O/bench-ingest-$k.txt" 2>&1; done
# The console's criterion bench too, when carried.
if [ -x ./device-bin/render-bench ]; then
  ./device-bin/render-bench --bench decode > "$O/bench-decode.txt" 2>&1
fi
# /metrics from real NVML, under load (the exporter's fixture), while the GEMM below runs.
scrape() {
  $B agent --interval 1s --frames 8 --listen 127.0.0.1:19401 --no-frames 2> "$O/exporter.stderr" &
  sleep 5
  python3 -c 'import urllib.request,sys; sys.stdout.write(urllib.request.urlopen("http://127.0.0.1:19401/metrics").read().decode())' > "$O/metrics-h200-$1.prom" 2>&1
  wait
}
measure idle
split idle
scrape idle
gemm_load 80 > "$O/gemm.txt" 2>&1 &
sleep 5
measure load
split load
scrape load
wait
head -c 3000 "$O/agent-100ms-load.ndjson" > "$O/agent-100ms-load.head"; rm -f "$O"/agent-100ms-*.ndjson
cat "$O/nproc.txt" "$O/probe-costs.txt" "$O"/*.stats "$O"/*.cpu "$O/gemm.txt"
grep -E "^decode|time:|thrpt" "$O/bench-decode.txt" 2>/dev/null
cat "$O"/bench-ingest-*.txt
