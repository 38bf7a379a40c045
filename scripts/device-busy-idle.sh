#!/usr/bin/env bash
# One device call (run from the repo root with the release binary at device-bin/burnin, device-bin
# carried): a real "busy but idle" GPU. torch.cuda._sleep launches one thread that spins on the
# clock, so NVML's utilization reads 100 % while GPM's SM activity is under 1 %: what a rank
# stuck in a collective looks like. The agent's stream of it becomes a fixture, and
# `burnin triage` on a local node must name it.
set -u
B=./device-bin/burnin
O=/tmp/burnin-out
rm -rf "$O"; mkdir -p "$O"
printf '[defaults]\nmode = "local"\ngpus = 1\ninterval = "1s"\n[[node]]\nhost = "h200"\n' > "$O/burnin.toml"
python3 - > "$O/spin.txt" 2>&1 <<'PY' &
import time, torch
torch.cuda.init()
t0 = time.time(); n = 0
while time.time() - t0 < 40:
    torch.cuda._sleep(1_000_000_000)   # ~0.5 s of one spinning thread at ~2 GHz
    torch.cuda.synchronize(); n += 1
print(f"{n} spin kernels in {time.time() - t0:.1f} s")
PY
SPIN=$!
sleep 4
$B agent --interval 1s --frames 25 --log-file "$O/agent-spin.log" > "$O/agent-busy-idle.ndjson" 2> "$O/agent-spin.err" &
$B triage --for 20s --json -c "$O/burnin.toml" --log-file "$O/triage.log" > "$O/triage-busy-idle.json" 2> "$O/triage.err"; echo "rc=$?" >> "$O/triage.err"
wait
nvidia-smi --query-gpu=index,utilization.gpu,clocks.sm,power.draw --format=csv > "$O/smi-after.csv" 2>&1
cp "$O"/* "${OUT:-/tmp}/" && cat "$O/spin.txt" "$O/triage.err" && head -c 3000 "$O/triage-busy-idle.json"
