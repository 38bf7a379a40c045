#!/usr/bin/env python3
"""burnin: all_reduce bus bandwidth through torch.distributed (NCCL), for sites without
nccl-tests. Run under torchrun (one process per GPU, any number of nodes). Rank 0 prints a
table in nccl-tests' layout (sizes in bytes, time in us, algbw/busbw in GB/s = 1e9 B/s,
busbw = algbw * 2(n-1)/n, #wrong = elements that differ from the expected sum), so the same
parser and gates read it. torch's all_reduce works in place, so there is one placement.
"""
import argparse
import os
import sys
import time


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("-b", "--min-bytes", type=int, default=8)
    p.add_argument("-e", "--max-bytes", type=int, default=1 << 30)
    p.add_argument("-f", "--factor", type=int, default=2)
    p.add_argument("-n", "--iters", type=int, default=20)
    p.add_argument("-w", "--warmup", type=int, default=5)
    args = p.parse_args()

    import torch
    import torch.distributed as dist

    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    expected = world * (world + 1) / 2.0
    if rank == 0:
        print("# Collective test starting: all_reduce_perf (burnin allreduce.py, torch %s)" % torch.__version__)
        print("# nThread 1 nGpus 1 minBytes %d maxBytes %d step: %d(factor) warmup iters: %d iters: %d validation: 1"
              % (args.min_bytes, args.max_bytes, args.factor, args.warmup, args.iters))
        print("#")
        print("#       size         count      type   redop    root     time   algbw   busbw  #wrong")
        print("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)        ")
        sys.stdout.flush()
    size = max(4, args.min_bytes)
    while size <= args.max_bytes:
        count = size // 4
        x = torch.empty(count, dtype=torch.float32, device=dev)
        for _ in range(args.warmup):
            x.fill_(rank + 1)
            dist.all_reduce(x)
        torch.cuda.synchronize(dev)
        dist.barrier()
        t = time.perf_counter()
        for _ in range(args.iters):
            dist.all_reduce(x)
        torch.cuda.synchronize(dev)
        elapsed = (time.perf_counter() - t) / args.iters
        # Validation pass on fresh data.
        x.fill_(rank + 1)
        dist.all_reduce(x)
        wrong = torch.tensor([int((x != expected).sum().item())], device=dev)
        dist.all_reduce(wrong)
        times = torch.tensor([elapsed], device=dev)
        dist.all_reduce(times, op=dist.ReduceOp.AVG)
        if rank == 0:
            us = float(times.item()) * 1e6
            algbw = size / (us * 1e-6) / 1e9
            busbw = algbw * 2.0 * (world - 1) / world
            print("%12d  %12d  %8s  %6s  %6d  %7.1f  %6.2f  %6.2f  %6d"
                  % (size, count, "float", "sum", -1, us, algbw, busbw, int(wrong.item())))
            sys.stdout.flush()
        size *= args.factor
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
