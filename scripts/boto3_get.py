#!/usr/bin/env python3
"""The boto3 side of scripts/bench-s3-vs-boto3.sh: N threads GET the same objects as
`burnin probe s3` for a fixed time, reading each body in 1 MiB chunks and dropping them
(as the probe does), and print one JSON line with bytes, GETs and GB/s.

Keys come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY. Same settings as the probe where
boto3 has them: path-style addressing, no retries, checksums only when required."""
import argparse
import json
import threading
import time

import boto3
from botocore.config import Config


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--bucket", required=True)
    ap.add_argument("--prefix", default="burnin-probe/")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=20.0)
    a = ap.parse_args()

    cfg = Config(
        s3={"addressing_style": "path"},
        retries={"total_max_attempts": 1},
        max_pool_connections=a.concurrency,
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
    )
    s3 = boto3.client("s3", endpoint_url=a.endpoint, region_name="us-east-1", config=cfg)
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=a.bucket, Prefix=a.prefix).get("Contents", [])]
    if not keys:
        raise SystemExit(f"no objects under s3://{a.bucket}/{a.prefix}")

    lock = threading.Lock()
    totals = {"bytes": 0, "gets": 0, "errors": 0}
    counter = {"next": 0}
    deadline = time.monotonic() + a.seconds

    def worker():
        while time.monotonic() < deadline:
            with lock:
                i = counter["next"]
                counter["next"] += 1
            try:
                body = s3.get_object(Bucket=a.bucket, Key=keys[i % len(keys)])["Body"]
                n = 0
                while True:
                    chunk = body.read(1 << 20)
                    if not chunk:
                        break
                    n += len(chunk)
                with lock:
                    totals["bytes"] += n
                    totals["gets"] += 1
            except Exception:  # counted, like the probe's error classes
                with lock:
                    totals["errors"] += 1

    started = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(a.concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    print(json.dumps({
        "boto3": boto3.__version__,
        "concurrency": a.concurrency,
        "elapsed_s": elapsed,
        "gets": totals["gets"],
        "errors": totals["errors"],
        "bytes": totals["bytes"],
        "throughput_gb_per_s": totals["bytes"] / 1e9 / elapsed,
    }))


if __name__ == "__main__":
    main()
