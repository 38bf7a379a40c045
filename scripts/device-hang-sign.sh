#!/usr/bin/env bash
# One device call (run from the repo root with the release binary at device-bin/burnin, device-bin
# carried): the GPU-hang sign that needs no GPM (sichek's rule: loaded, power under the model's
# floor, clock high, PCIe quiet, for 100 s) on a real GPU, and its counterpart under real work.
# 1. torch.cuda._sleep spins one thread for 150 s: the agent records 130 frames of it while
#    `burnin triage --for 125s` watches the same GPU as a local node (it must name busy-idle).
# 2. gemm.py (bf16, then fp8, 70 s each): the agent records 120 frames (power near the limit: no sign).
# GPM streaming is never toggled (the agent samples GPM; nothing here switches it).
set -u
. "$PWD/scripts/device-lib.sh"
B=./device-bin/burnin
O=/tmp/burnin-out
rm -rf "$O"; mkdir -p "$O"
printf '[defaults]\nmode = "local"\ngpus = 1\ninterval = "1s"\n[[node]]\nhost = "gpu"\n' > "$O/burnin.toml"
nvidia-smi --query-gpu=name,pci.device_id,power.limit,clocks.max.sm --format=csv > "$O/smi-gpu.csv" 2>&1
spin_kernels 150 > "$O/spin.txt" 2>&1 &
sleep 4
$B agent --interval 1s --frames 130 --log-file "$O/agent-spin.log" > "$O/agent-spin-130s.ndjson" 2> "$O/agent-spin.err" &
$B triage --for 125s --json -c "$O/burnin.toml" --log-file "$O/triage.log" > "$O/triage-spin-125s.json" 2> "$O/triage.err"; echo "rc=$?" >> "$O/triage.err"
wait
$B workload print gemm > "$O/gemm.py"
python3 "$O/gemm.py" --seconds 70 > "$O/gemm.txt" 2>&1 &
sleep 8
$B agent --interval 1s --frames 120 --log-file "$O/agent-gemm.log" > "$O/agent-gemm-120s.ndjson" 2> "$O/agent-gemm.err"
wait
cp "$O"/* "${OUT:-/tmp}/" && cat "$O/smi-gpu.csv" "$O/spin.txt" "$O/triage.err" && tail -n 3 "$O/gemm.txt" && head -c 2500 "$O/triage-spin-125s.json"
