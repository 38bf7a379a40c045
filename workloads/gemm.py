#!/usr/bin/env python3
"""burnin T2: sustained dense GEMM throughput of every GPU of this node, all at once.

One process per GPU (so each GPU is measured while its neighbours are loaded too, as on
burn-in day). Each runs square matmuls back to back for --seconds and prints one JSON line per
dtype: {"burnin":"gemm","gpu":N,"dtype":"bf16","tflops":X,...}. FP8 uses torch._scaled_mm
where the GPU and PyTorch support it; where they do not, it says so in an "info" line instead
of printing a number that was not measured.
"""
import argparse
import json
import multiprocessing as mp
import os
import sys
import time

# "gpu": N must be the GPU nvidia-smi and NVML call N (the console's GPU N, its telemetry and
# triage): CUDA's own order is fastest first, which differs on a node of mixed GPUs.
os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")


def emit(**kw):
    print(json.dumps(kw), flush=True)


def measure(gpu, dtype, size, seconds, q):
    import torch

    try:
        torch.cuda.set_device(gpu)
        dev = torch.device("cuda", gpu)
        a = torch.randn(size, size, device=dev, dtype=torch.bfloat16)
        b = torch.randn(size, size, device=dev, dtype=torch.bfloat16)
        if dtype == "bf16":
            def step():
                return a @ b
        elif dtype == "fp8":
            if not hasattr(torch, "float8_e4m3fn") or not hasattr(torch, "_scaled_mm"):
                q.put(("info", gpu, dtype, "this PyTorch has no float8 matmul"))
                return
            if torch.cuda.get_device_capability(dev) < (8, 9):
                q.put(("info", gpu, dtype, "FP8 needs compute capability 8.9 or newer"))
                return
            a8 = a.to(torch.float8_e4m3fn)
            # _scaled_mm wants the second operand column-major.
            b8 = b.to(torch.float8_e4m3fn).t().contiguous().t()
            one = torch.tensor(1.0, device=dev)

            def step():
                return torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        else:
            q.put(("error", gpu, dtype, f"unknown dtype {dtype}"))
            return
        for _ in range(3):
            step()
        torch.cuda.synchronize(dev)
        # Calibrate a batch that takes about 0.2 s, then run batches until the time is up.
        t = time.perf_counter()
        step()
        torch.cuda.synchronize(dev)
        per = max(time.perf_counter() - t, 1e-6)
        batch = max(1, int(0.2 / per))
        iters = 0
        start = time.perf_counter()
        while True:
            for _ in range(batch):
                step()
            torch.cuda.synchronize(dev)
            iters += batch
            elapsed = time.perf_counter() - start
            if elapsed >= seconds:
                break
        tflops = 2.0 * size**3 * iters / elapsed / 1e12
        q.put(("gemm", gpu, dtype, {"tflops": round(tflops, 1), "m": size, "n": size, "k": size,
                                    "iters": iters, "seconds": round(elapsed, 3)}))
    except Exception as e:  # a broken GPU must be reported, not hang the phase
        q.put(("error", gpu, dtype, f"{type(e).__name__}: {e}"))


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--size", type=int, default=8192)
    p.add_argument("--dtypes", default="bf16,fp8")
    p.add_argument("--gpus", default="all", help="all, or a comma list of indices")
    args = p.parse_args()
    try:
        import torch
    except ImportError as e:
        emit(burnin="error", text=f"PyTorch is not importable here: {e}")
        return 2
    if not torch.cuda.is_available():
        emit(burnin="error", text="CUDA is not available to PyTorch")
        return 2
    n = torch.cuda.device_count()
    gpus = list(range(n)) if args.gpus == "all" else [int(x) for x in args.gpus.split(",")]
    emit(burnin="info", torch=torch.__version__, cuda=torch.version.cuda, gpus=len(gpus),
         name=torch.cuda.get_device_name(0))
    ctx = mp.get_context("spawn")
    failed = False
    for dtype in args.dtypes.split(","):
        q = ctx.Queue()
        procs = [ctx.Process(target=measure, args=(g, dtype, args.size, args.seconds, q)) for g in gpus]
        for pr in procs:
            pr.start()
        results = {}
        for _ in procs:
            kind, gpu, dt, payload = q.get()
            results[gpu] = (kind, dt, payload)
        for pr in procs:
            pr.join()
        for gpu in sorted(results):
            kind, dt, payload = results[gpu]
            if kind == "gemm":
                emit(burnin="gemm", gpu=gpu, dtype=dt, **payload)
            elif kind == "info":
                emit(burnin="info", gpu=gpu, dtype=dt, text=payload)
            else:
                failed = True
                emit(burnin="error", text=f"gpu {gpu} {dt}: {payload}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
