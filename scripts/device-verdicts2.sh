#!/usr/bin/env bash
# Second device call for docs/verdicts.md (repo root, release binary in device-bin/burnin,
# device-bin carried): the broken runs the first call (scripts/device-verdicts.sh) could not
# give, against the baseline that call saved (tests/fixtures/h200-verdicts/burnin-baseline.json).
#
#  1. T8 alone with another tenant's bf16 GEMM on the GPU all along (in the first call T8 was
#     skipped: it needs T5, which failed).
#  2. T8 alone with 48 busy shell loops on the 16 CPUs: does the loader starve (data wait)?
#  3. D2 with the job run once, not in the plan's restart loop (a site whose supervisor does not
#     restart training): burnin kills it, nothing comes back. Short windows (steady 30 s,
#     settle 20 s, the step's limit 60 s) for the device minutes.
# Every step leaves its record in $OUT/runs2.tgz.
set -u
B=$PWD/device-bin/burnin
BASE=$PWD/tests/fixtures/h200-verdicts/burnin-baseline.json
. "$PWD/scripts/device-lib.sh"
O=/tmp/burnin-verdicts2
rm -rf "$O"; mkdir -p "$O/shards"; cd "$O"
make_shards
local_site "$B"
cp "$BASE" burnin-baseline.json
python3 - "$O/shards" <<'PY'
import sys
s = open("plan.toml").read()
s = s.replace('data = ""', f'data = "{sys.argv[1]}"', 1)
i = s.index('id = "D2"')
a = s.index("command = '''", i)
b = s.index("'''", a + 13) + 3
s = s[:a] + ('command = "{prefix} python3 -m torch.distributed.run --standalone --nproc_per_node={gpus} '
             '{workloads}/train_synthetic.py --steps 100000000 --checkpoint {dir}/checkpoint --checkpoint-every 500"') + s[b:]
s = s.replace('steady = "2m"', 'steady = "30s"', 1).replace('settle = "1m"', 'settle = "20s"', 1)
j = s.index('within = "10m"', i)
s = s[:j] + 'within = "60s"' + s[j + len('within = "10m"'):]
open("plan.toml", "w").write(s)
PY

# 1. T8 beside another tenant's GEMM.
gemm_load 100 > competitor.txt 2>&1 &
COMP=$!
sleep 5
timeout 120 "$B" run --only T8 --json > t8-tenant.json 2> t8-tenant.err < /dev/null; echo "rc=$?" >> t8-tenant.err
kill "$COMP" 2>/dev/null; wait "$COMP" 2>/dev/null

# 2. T8 with every CPU busy.
HOGS=()
for _ in $(seq 48); do (while :; do :; done) & HOGS+=($!); done
timeout 120 "$B" run --only T8 --json > t8-cpu.json 2> t8-cpu.err < /dev/null; echo "rc=$?" >> t8-cpu.err
kill "${HOGS[@]}" 2>/dev/null; wait 2>/dev/null

# 3. D2 without the restart loop.
timeout 200 "$B" run --only D2 --json > d2-noloop.json 2> d2-noloop.err < /dev/null; echo "rc=$?" >> d2-noloop.err

rm -rf shards
find burnin-runs -name '*.pt' -delete
tar czf "$OUT/runs2.tgz" -C "$O" .
tail -n 12 t8-tenant.err t8-cpu.err d2-noloop.err
