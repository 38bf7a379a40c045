#!/usr/bin/env bash
# One device call (scripts/device-bin.sh first, then carry device-bin): the NVML call costs
# (--probe-costs, idle and again under a bf16 GEMM, whose process makes the process-list call
# answer), then `burnin bench agent` with 8 slots at 1 s and 100 ms and 1 slot at 1 s, idle
# and under the GEMM; each --stats line carries every background thread's CPU after frame 10,
# read from the thread's own clock; and nvidia-smi -lms 1000 beside nothing, for the price of
# one nvidia-smi sample at the agent's default interval. Results go to $OUT.
set -u
. "$PWD/scripts/device-lib.sh"
B=./device-bin/burnin
O=${OUT:-/tmp/out}
mkdir -p "$O"
$B agent --probe-costs > "$O/probe-costs-idle.txt" 2>&1
MODERN=index,uuid,name,power.draw.average,power.draw.instant,enforced.power.limit,temperature.gpu,utilization.gpu,clocks.current.sm,clocks.max.sm,clocks.current.memory,memory.used,memory.total,clocks_event_reasons.active,ecc.errors.corrected.volatile.total,ecc.errors.uncorrected.volatile.total
TIMEFORMAT='%U %S %R'
( time timeout 30 nvidia-smi --query-gpu=$MODERN --format=csv,noheader,nounits -lms 1000 > "$O/smi-1s.csv" ) 2> "$O/smi-1s.cpu"
runs() { # $1 = idle or load
  $B bench agent --slots 8 --interval 1s --frames 50 > "$O/slots8-1s-$1.txt" 2>&1
  $B bench agent --slots 8 --interval 100ms --frames 300 > "$O/slots8-100ms-$1.txt" 2>&1
  $B bench agent --slots 1 --interval 1s --frames 40 > "$O/slots1-1s-$1.txt" 2>&1
}
runs idle
gemm_load 190 > "$O/gemm.txt" 2>&1 &
sleep 5
$B agent --probe-costs > "$O/probe-costs-load.txt" 2>&1
runs load
wait
echo "nvidia-smi -lms 1000, 30 s (user sys wall): $(cat "$O/smi-1s.cpu"), $(wc -l < "$O/smi-1s.csv") samples"
for f in "$O"/probe-costs-*.txt; do echo "== $(basename "$f")"; grep -v "freshness\|GPU0   \|GPM Ok" "$f"; done
for f in "$O"/slots*.txt; do echo "== $(basename "$f")"; tail -1 "$f"; done
cat "$O/gemm.txt"
