#!/usr/bin/env bash
# Second device call (repo root, release binary in device-bin/burnin, device-bin carried):
# `burnin run` on the H200 as a `local` node WITH telemetry (the local NVML agent runs beside
# the phases, so the no-xid gates are judged from real readings): T1, T2, T5 (1-GPU job, then
# the full job: on one GPU both are 1 GPU, so scaling is reported as not judged), and the
# shipped allreduce.py under torch.distributed on one rank (checks the script end to end; a
# single rank has no bus traffic, so its busbw is 0 by definition). Results in $OUT/results.tgz.
set -u
B=$PWD/device-bin/burnin
. "$PWD/scripts/device-lib.sh"
O=/tmp/burnin-phases2
rm -rf "$O"; mkdir -p "$O"; cd "$O"
local_site "$B"
sed -e 's|gemm.py --seconds 20|gemm.py --seconds 10|' \
    -e 's|train_synthetic.py --steps 100$|train_synthetic.py --steps 150|' \
    -e 's|train_synthetic.py --steps 300$|train_synthetic.py --steps 300|' plan.toml > p && mv p plan.toml
cat >> plan.toml <<'TOML'

[[phase]]
id = "AR"
title = "allreduce.py (one rank)"
scope = "each-node"
parser = "nccl-tests"
timeout = "5m"
gates = [{ kind = "zero-wrong" }, { kind = "no-xid" }]
command = "python3 -m torch.distributed.run --standalone --nproc_per_node={gpus} {workloads}/allreduce.py -b 1024 -e 268435456"
TOML
$B run --only T1,T2,T5,AR --json > run.json 2> run.err; echo "rc=$?" >> run.err
tar czf "$OUT/results.tgz" -C "$O" .
tail -n 40 run.err
