#!/usr/bin/env bash
# One device call (repo root, release binary in device-bin/burnin, device-bin carried): a real
# record on the H200 and its report. `burnin run --only T1,T2` on a `local` node with the
# telemetry on (GEMM for 10 s), then `burnin report` on the record, a short headless
# `burnin replay` of it, and the agent's hello (what the node says of its kernel, OS, fabric
# manager and NCCL). Everything small enough comes back under $OUT.
set -u
B=$PWD/device-bin/burnin
. "$PWD/scripts/device-lib.sh"
O=/tmp/burnin-report
rm -rf "$O"; mkdir -p "$O"; cd "$O"
local_site "$B"
sed -e 's|gemm.py --seconds 20|gemm.py --seconds 10|' plan.toml > p && mv p plan.toml
$B agent --interval 1s --frames 1 > hello.ndjson 2> agent.err
$B run --only T1,T2 --json > run.json 2> run.err; echo "rc=$?" >> run.err
RUN=$(ls -d burnin-runs/*/ | head -1)
$B report "$RUN" > report.out 2> report.err; echo "rc=$?" >> report.err
$B replay "$RUN" --speed 20 --headless 160x48 --duration 3 > replay.out 2> replay.err; echo "rc=$?" >> replay.err
du -sb "$RUN" "$RUN"/telemetry/* > sizes.txt
mkdir -p "$OUT/record"
cp -r "$RUN"/. "$OUT/record/"
cp hello.ndjson run.err report.err replay.err sizes.txt plan.toml burnin.toml "$OUT/"
tail -n 12 run.err; cat report.err replay.err sizes.txt; head -c 600 hello.ndjson | tr ',' '\n' | grep -i -A3 system
