#!/usr/bin/env bash
# One device call (device-bin/burnin carried): issue 29's agent figure with the GPM cadence
# (agent::gpm_cadence: GPM every round on busy-idle suspects only, every 10 s on the rest).
# `burnin bench agent --slots 8 --interval 1s`, idle and under a bf16 GEMM, beside
# nvidia-smi -lms 1000 with the agent's fields for 40 s, alone; then the real busy-idle GPU
# (torch.cuda._sleep) under `burnin triage`, which must still name it. Results go to $OUT.
set -u
. "$PWD/scripts/device-lib.sh"
B=./device-bin/burnin
O=${OUT:-/tmp/out}
mkdir -p "$O"
MODERN=index,uuid,name,power.draw.average,power.draw.instant,enforced.power.limit,temperature.gpu,utilization.gpu,clocks.current.sm,clocks.max.sm,clocks.current.memory,memory.used,memory.total,clocks_event_reasons.active,ecc.errors.corrected.volatile.total,ecc.errors.uncorrected.volatile.total
TIMEFORMAT='%U %S %R'
( time timeout 40 nvidia-smi --query-gpu=$MODERN --format=csv,noheader,nounits -lms 1000 > "$O/smi-1s-idle.csv" ) 2> "$O/smi-1s-idle.cpu"
$B bench agent --slots 8 --interval 1s --frames 60 > "$O/slots8-1s-idle.txt" 2>&1
gemm_load 130 > "$O/gemm.txt" 2>&1 &
sleep 5
$B bench agent --slots 8 --interval 1s --frames 60 > "$O/slots8-1s-load.txt" 2>&1
( time timeout 40 nvidia-smi --query-gpu=$MODERN --format=csv,noheader,nounits -lms 1000 > "$O/smi-1s-load.csv" ) 2> "$O/smi-1s-load.cpu"
wait
# The real busy-idle GPU, through the agent's cadence, under triage.
printf '[defaults]\nmode = "local"\ngpus = 1\ninterval = "1s"\n[[node]]\nhost = "h200"\n' > "$O/burnin.toml"
spin_kernels 40 > "$O/spin.txt" 2>&1 &
sleep 4
$B agent --interval 1s --frames 25 > "$O/agent-busy-idle.ndjson" 2> "$O/agent-spin.err" &
$B triage --for 20s --json -c "$O/burnin.toml" > "$O/triage-busy-idle.json" 2> "$O/triage.err"; echo "rc=$?" >> "$O/triage.err"
wait
echo "nvidia-smi -lms 1000, 40 s idle (user sys wall): $(cat "$O/smi-1s-idle.cpu"), $(wc -l < "$O/smi-1s-idle.csv") samples"
echo "nvidia-smi -lms 1000, 40 s load (user sys wall): $(cat "$O/smi-1s-load.cpu"), $(wc -l < "$O/smi-1s-load.csv") samples"
for f in "$O"/slots*.txt; do echo "== $(basename "$f")"; tail -2 "$f"; done
cat "$O/gemm.txt" "$O/spin.txt" "$O/triage.err"
head -c 1500 "$O/triage-busy-idle.json"; echo
