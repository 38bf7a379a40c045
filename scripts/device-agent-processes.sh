#!/usr/bin/env bash
# One device call (scripts/device-bin.sh first, then carry device-bin), all under a bf16 GEMM
# whose process the GPU lists: the NVML call costs (--probe-costs: the process list through
# nvml-wrapper's two calls and through the agent's one, cold and back to back, and the PIDs
# both give), 5 s of real agent frames (their compute_pids), then `burnin bench agent` with 1
# and 8 slots at 1 s. Results go to $OUT.
set -u
. "$PWD/scripts/device-lib.sh"
B=./device-bin/burnin
O=${OUT:-/tmp/out}
mkdir -p "$O"
gemm_load 170 > "$O/gemm.txt" 2>&1 &
sleep 5
$B agent --probe-costs > "$O/probe-load.txt" 2>&1
timeout 5 $B agent --interval 1s > "$O/frames-load.ndjson" 2>/dev/null
$B bench agent --slots 1 --interval 1s --frames 40 > "$O/slots1-1s-load.txt" 2>&1
$B bench agent --slots 8 --interval 1s --frames 50 > "$O/slots8-1s-load.txt" 2>&1
wait
grep -E "running_compute|compute_pids|compute processes|background round|cold gpm_sample  " "$O/probe-load.txt"
echo "compute_pids in the last frames (the row's last column):"
grep -o '\[[0-9,]*\]\]\]' "$O/frames-load.ndjson" | tail -3
tail -1 "$O/slots1-1s-load.txt"
tail -1 "$O/slots8-1s-load.txt"
cat "$O/gemm.txt"
