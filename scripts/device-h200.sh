#!/usr/bin/env bash
# One device call (run from the repo root with the release binary copied to device-bin/burnin,
# device-bin carried): burnin's NVML agent on a real H200, idle and under a bf16 GEMM load,
# its CPU per GPU-sample beside nvidia-smi -lms, status --json with a local node, and the
# nvidia-smi queries our smi mode sends.
set -u
. "$PWD/scripts/device-lib.sh"
B=./device-bin/burnin
O=/tmp/burnin-out
rm -rf "$O"; mkdir -p "$O"
$B agent --probe-costs > "$O/probe-costs.txt" 2>&1
nvidia-smi -L > "$O/nvidia-smi-L.txt" 2>&1
cat /proc/driver/nvidia/version > "$O/driver-version.txt" 2>&1
MODERN=index,uuid,name,power.draw.average,power.draw.instant,enforced.power.limit,temperature.gpu,utilization.gpu,clocks.current.sm,clocks.max.sm,clocks.current.memory,memory.used,memory.total,clocks_event_reasons.active,ecc.errors.corrected.volatile.total,ecc.errors.uncorrected.volatile.total
LEGACY=index,uuid,name,power.draw,power.limit,temperature.gpu,utilization.gpu,clocks.sm,clocks.max.sm,clocks.mem,memory.used,memory.total,clocks_throttle_reasons.active,ecc.errors.corrected.volatile.total,ecc.errors.uncorrected.volatile.total
nvidia-smi --query-gpu=$MODERN --format=csv,noheader,nounits > "$O/smi-modern-idle.csv" 2>&1; echo "rc=$?" >> "$O/smi-modern-idle.csv"
nvidia-smi --query-gpu=$LEGACY --format=csv,noheader,nounits > "$O/smi-legacy-idle.csv" 2>&1; echo "rc=$?" >> "$O/smi-legacy-idle.csv"
printf '[defaults]\nmode = "local"\ngpus = 1\ninterval = "1s"\n[[node]]\nhost = "h200"\n' > "$O/burnin.toml"

measure() { # $1 = label: agent at 100 ms and nvidia-smi -lms 100 side by side for 30 s
  TIMEFORMAT='%U %S'
  ( time timeout 30 nvidia-smi --query-gpu=$MODERN --format=csv,noheader,nounits -lms 100 > "$O/smi-lms100-$1.csv" ) 2> "$O/smi-lms100-$1.cpu" &
  $B agent --interval 100ms --frames 300 --stats --log-file "$O/agent-cpu-$1.log" > /dev/null 2> "$O/agent-cpu-$1.stats" &
  wait
}

# Idle: the 1 s stream (fixture) and the CPU measurement, in parallel.
$B agent --interval 1s --frames 30 --stats --log-file "$O/agent-idle.log" > "$O/agent-idle.ndjson" 2> "$O/agent-idle.stats" &
measure idle
wait
$B status --json -c "$O/burnin.toml" --log-file "$O/status.log" > "$O/status-idle.json" 2> "$O/status-idle.err"; echo "rc=$?" >> "$O/status-idle.err"

# Load: bf16 8192^3 GEMM loop for ~45 s.
gemm_load 45 > "$O/gemm.txt" 2>&1 &
GEMM=$!
sleep 6
$B agent --interval 1s --frames 30 --stats --log-file "$O/agent-load.log" > "$O/agent-load.ndjson" 2> "$O/agent-load.stats" &
measure load
wait
$B status --json -c "$O/burnin.toml" > "$O/status-after.json" 2>&1
nvidia-smi --query-gpu=$MODERN --format=csv,noheader,nounits > "$O/smi-modern-after.csv" 2>&1
tar czf "${OUT:-/tmp}/results.tgz" -C "$O" . && ls -la "$O" | wc -l && cat "$O/probe-costs.txt" "$O"/*.stats "$O/gemm.txt"
