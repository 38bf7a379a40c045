#!/usr/bin/env python3
"""burnin T5/T8: a DDP burn-in training loop that reports what the engineer needs per step.

A small GPT-style transformer trained on token shards with torch.distributed (NCCL) under
torchrun (or alone on one GPU). Data comes from --data: a local directory of *.bin / *.npy
files of uint16 tokens, s3://bucket/prefix (boto3, with AWS_* variables or ~/.aws), or
"synthetic" (random tokens made on the GPU: no storage in the loop, the baseline for T8).
With --reader gds the loader reads a local directory through cuFile (GPUDirect Storage)
straight into GPU memory: PyTorch's own torch.cuda.gds where PyTorch was built with cuFile,
else kvikio; where neither can read, it says so in one line and exits 0 (T8 runs as before).

Rank 0 prints one JSON line per step:
  {"burnin":"step","step":N,"step_time_ms":..,"data_wait_ms":..,"tokens_per_sec":..,"loss":..}
data_wait_ms is the time the step waited for its batch (the loader's queue was empty), the
figure that says whether storage starves the GPUs; and once {"burnin":"first_batch","ms":..}.
"""
import argparse
import json
import os
import queue
import sys
import threading
import time


def emit(**kw):
    print(json.dumps(kw), flush=True)


def shard_source(spec, rank, world):
    """Yields raw shard bytes for this rank, round robin over the shard list, forever."""
    if spec.startswith("s3://"):
        import boto3  # only needed for S3 data

        bucket, _, prefix = spec[5:].partition("/")
        s3 = boto3.client("s3", endpoint_url=os.environ.get("AWS_ENDPOINT_URL"))
        keys = []
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            keys += [o["Key"] for o in page.get("Contents", [])]
        keys.sort()
        if not keys:
            raise SystemExit(f"no objects under {spec}")
        mine = keys[rank::world] or keys
        while True:
            for k in mine:
                yield s3.get_object(Bucket=bucket, Key=k)["Body"].read()
    else:
        files = sorted(
            os.path.join(spec, f) for f in os.listdir(spec) if f.endswith((".bin", ".npy"))
        )
        if not files:
            raise SystemExit(f"no *.bin or *.npy shards in {spec}")
        mine = files[rank::world] or files
        while True:
            for f in mine:
                with open(f, "rb") as fh:
                    yield fh.read()


# cuFile reads with O_DIRECT: offsets and sizes in whole 4 KiB blocks (a shard's last partial
# block, under 2048 tokens, is not read). Chunks of 8 MiB.
GDS_BLOCK = 4096
GDS_CHUNK = 8 << 20


def gds_reader():
    """The cuFile reader this node has: ("torch.cuda.gds", open_shard) or ("kvikio",
    open_shard), where open_shard(path) gives an object whose read(offset, tensor) fills a CUDA
    uint8 tensor from the file and close() lets it go; or (None, why)."""
    import torch

    why = []
    if hasattr(torch._C, "_gds_register_buffer"):
        import torch.cuda.gds as gds

        class TorchShard:
            def __init__(self, path):
                self.f = gds.GdsFile(path, os.O_RDONLY)  # it adds O_DIRECT

            def read(self, offset, t):
                self.f.load_storage(t.untyped_storage(), offset)

            def close(self):
                self.f = None  # GdsFile's __del__ deregisters the handle and closes the file

        return "torch.cuda.gds", TorchShard
    why.append("PyTorch was built without cuFile")
    try:
        import kvikio

        # kvikio falls back to plain POSIX reads by itself (its compat mode): said, not hidden.
        mode = getattr(getattr(kvikio, "defaults", None), "compat_mode", None)
        gds_reader.kvikio_compat = str(mode()) if callable(mode) else None

        class KvikioShard:
            def __init__(self, path):
                self.f = kvikio.CuFile(path, "r")

            def read(self, offset, t):
                n = self.f.read(t, t.numel(), offset)
                if n != t.numel():
                    raise OSError(f"kvikio read {n} of {t.numel()} bytes at {offset}")

            def close(self):
                self.f.close()

        return "kvikio", KvikioShard
    except ImportError:
        why.append("kvikio is not installed")
    return None, " and ".join(why)


def cufile_logs():
    """cuFile's log files as they stand: {path: size}. cuFile logs (at ERROR) into cufile.log
    in the working directory unless cufile.json's logging.dir says otherwise, or to
    CUFILE_LOGFILE_PATH; several ranks and runs may append to one file."""
    dirs = ["."]
    if os.environ.get("CUFILE_LOGFILE_PATH"):
        dirs.append(os.path.dirname(os.environ["CUFILE_LOGFILE_PATH"]) or ".")
    sizes = {}
    for d in dirs:
        try:
            names = sorted(n for n in os.listdir(d) if n.startswith("cufile") and n.endswith(".log"))
            for n in names[:16]:
                path = os.path.join(d, n)
                sizes[path] = os.path.getsize(path)
        except OSError:
            continue
    return sizes


def cufile_log_errors(before, limit=2):
    """cuFile's own reason for a failed call: the first distinct ERROR messages its logs gained
    since `before` (a cufile_logs() taken just before the call; at most 64 KiB read per file).
    Its register error only says "not registered"; the lines before it say why (a volume it
    cannot name, nvidia_fs not loaded)."""
    msgs = []
    for path, size in cufile_logs().items():
        start = before.get(path, 0)
        if size <= start:
            continue
        try:
            with open(path, "rb") as f:
                f.seek(start)
                text = f.read(min(size - start, 65536)).decode("utf-8", "replace")
        except OSError:
            continue
        for line in text.splitlines():
            if " ERROR " not in line:
                continue
            # "… ERROR  cufio-udev:67 udev property not found: …": the words after the source
            # location.
            words = line.split(" ERROR ", 1)[1].strip().split(" ", 1)
            msg = words[1].strip() if len(words) == 2 and ":" in words[0] else " ".join(words)
            if msg and "cuFileHandleRegister" not in msg and msg not in msgs:
                msgs.append(msg)
    return "; ".join(m[:120] for m in msgs[:limit])


def nvidia_fs_loaded():
    return os.path.isdir("/sys/module/nvidia_fs")


def gds_loader(spec, rank, world, batch, seq, vocab, out_q, stop, dev, open_shard):
    """The loader through cuFile: shard bytes land in GPU memory, tokens are cut there. A
    failure goes on the queue as ("failed", why) for the training loop to end on, never a
    thread that dies and leaves the loop waiting."""
    try:
        gds_batches(spec, rank, world, batch, seq, vocab, out_q, stop, dev, open_shard)
    except Exception as e:  # cuFile's and the reader's errors, whatever their type
        out_q.put(("failed", f"{type(e).__name__}: {e}"[:300]))


def gds_batches(spec, rank, world, batch, seq, vocab, out_q, stop, dev, open_shard):
    import torch

    torch.cuda.set_device(dev)
    stream = torch.cuda.Stream(dev)
    files = sorted(
        os.path.join(spec, f) for f in os.listdir(spec) if f.endswith((".bin", ".npy"))
    )
    mine = [f for f in (files[rank::world] or files) if os.path.getsize(f) >= GDS_BLOCK]
    if not mine:
        out_q.put(("failed", f"rank {rank} has no shard of 4 KiB or more in {spec}"))
        return
    need = batch * (seq + 1)
    buf = torch.zeros(0, dtype=torch.int64, device=dev)
    while not stop.is_set():
        for path in mine:
            size = os.path.getsize(path) // GDS_BLOCK * GDS_BLOCK
            shard = open_shard(path)
            try:
                for offset in range(0, size, GDS_CHUNK):
                    if stop.is_set():
                        return
                    with torch.cuda.stream(stream):
                        # Allocated on the loader's own stream, whose work is finished below
                        # before the next read: cuFile's DMA never lands in a block that
                        # queued kernels of another stream still read.
                        raw = torch.empty(
                            min(GDS_CHUNK, size - offset), dtype=torch.uint8, device=dev
                        )
                    shard.read(offset, raw)
                    with torch.cuda.stream(stream):
                        tokens = (raw.view(torch.int16).to(torch.int64) & 0xFFFF) % vocab
                        buf = torch.cat([buf, tokens])
                        batches = []
                        while buf.numel() >= need:
                            batches.append(buf[:need].reshape(batch, seq + 1))
                            buf = buf[need:]
                    stream.synchronize()
                    for b in batches:
                        out_q.put(b)
            finally:
                shard.close()


def loader(spec, rank, world, batch, seq, vocab, out_q, stop):
    import numpy as np

    need = batch * (seq + 1)
    buf = np.zeros(0, dtype=np.uint16)
    for raw in shard_source(spec, rank, world):
        if stop.is_set():
            return
        arr = np.frombuffer(raw, dtype=np.uint16)
        buf = np.concatenate([buf, arr])
        while len(buf) >= need:
            chunk, buf = buf[:need], buf[need:]
            out_q.put((chunk.astype(np.int64) % vocab).reshape(batch, seq + 1))
            if stop.is_set():
                return


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--data", default="synthetic")
    p.add_argument("--steps", type=int, default=300, help="stop after this many steps")
    p.add_argument("--seconds", type=float, default=0.0,
                   help="also stop after this long (0: no limit); for soak runs")
    p.add_argument("--batch", type=int, default=8, help="sequences per GPU per step")
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--dim", type=int, default=1024)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--prefetch", type=int, default=4)
    p.add_argument("--checkpoint", default="",
                   help="directory of the job's checkpoint: restored at start when it is there "
                        "(the checkpoint drill kills the job and times its return)")
    p.add_argument("--checkpoint-every", type=int, default=0,
                   help="save the checkpoint every N steps (0: never)")
    # Not "--numa": torchrun would take it for an abbreviation of its own --numa-binding.
    p.add_argument("--reader", choices=["posix", "gds"], default="posix",
                   help="gds: read --data (a local directory) through cuFile into GPU memory")
    p.add_argument("--pin-loader", choices=["off", "gpu"], default=None,
                   help="gpu: pin this rank (and its loader) to the CPUs of its GPU's NUMA node; "
                        "off: say that it is not pinned (for a comparison of the two)")
    args = p.parse_args()

    import torch
    import torch.distributed as dist
    import torch.nn as nn

    t0 = time.perf_counter()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if not torch.cuda.is_available():
        emit(burnin="error", text="CUDA is not available to PyTorch")
        return 2
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    if args.pin_loader == "gpu":
        # The loader thread inherits this affinity; its buffers are then first touched on the
        # GPU's NUMA node. (Memory binding proper needs numactl/libnuma; CPU pinning is what
        # the loader's locality depends on most.)
        props = torch.cuda.get_device_properties(dev)
        bus = "%04x:%02x:%02x.0" % (getattr(props, "pci_domain_id", 0), props.pci_bus_id, props.pci_device_id)
        try:
            with open(f"/sys/bus/pci/devices/{bus}/local_cpulist") as fh:
                cpulist = fh.read().strip()
            with open(f"/sys/bus/pci/devices/{bus}/numa_node") as fh:
                node = fh.read().strip()
            cpus = set()
            for part in cpulist.split(","):
                lo, _, hi = part.partition("-")
                cpus.update(range(int(lo), int(hi or lo) + 1))
            os.sched_setaffinity(0, cpus)
            if rank == 0:
                emit(burnin="info", numa="gpu", pci=bus, numa_node=node, cpus=cpulist)
        except (OSError, ValueError) as e:
            emit(burnin="error", text=f"--pin-loader gpu: cannot pin to {bus}'s CPUs: {e}")
            return 2
    if world > 1:
        dist.init_process_group("nccl")

    class TinyGPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(args.vocab, args.dim)
            layer = nn.TransformerEncoderLayer(
                args.dim, args.heads, 4 * args.dim, dropout=0.0, batch_first=True, norm_first=True
            )
            self.blocks = nn.TransformerEncoder(layer, args.layers, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(args.dim)
            self.head = nn.Linear(args.dim, args.vocab)
            self.register_buffer(
                "mask", nn.Transformer.generate_square_subsequent_mask(args.seq), persistent=False
            )

        def forward(self, x):
            h = self.blocks(self.embed(x), mask=self.mask, is_causal=True)
            return self.head(self.norm(h))

    model = TinyGPT().to(dev)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[local])
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)

    stop = threading.Event()
    q = None
    if args.reader == "gds":
        # Which reader, and whether it can read here at all: one probe read of the first
        # shard. A node that cannot is said so, and the GDS column is left out (not a failure).
        name, open_shard = gds_reader()
        why = None if name else open_shard
        if name and (args.data == "synthetic" or args.data.startswith("s3://")):
            why = "--reader gds reads a local directory on the GDS mount, not " + args.data
        elif name:
            logs_before = cufile_logs()  # what cuFile's logs gain from here on is this probe's
            try:
                shards = sorted(
                    f for f in os.listdir(args.data) if f.endswith((".bin", ".npy"))
                )
                first = os.path.join(args.data, shards[0]) if shards else None
                if first is None or os.path.getsize(first) < GDS_BLOCK:
                    why = f"no shard of 4 KiB or more in {args.data}"
                else:
                    shard = open_shard(first)
                    try:
                        shard.read(0, torch.empty(GDS_BLOCK, dtype=torch.uint8, device=dev))
                    finally:
                        shard.close()
            except Exception as e:  # cuFile's and the reader's own errors, whatever their type
                why = f"{name} could not read {args.data}: {e}"[:200]
                said = cufile_log_errors(logs_before)
                if said:
                    why += f" (cuFile's log: {said})"
        if world > 1:
            # Every rank goes on, or none: a rank alone in its collectives would hang.
            flag = torch.tensor([1.0 if why is None else 0.0], device=dev)
            dist.all_reduce(flag, op=dist.ReduceOp.MIN)
            if why is None and flag.item() == 0:
                why = "another rank could not read through cuFile"
        if rank == 0:
            emit(burnin="gds_reader", reader=name if why is None else None,
                 nvidia_fs=nvidia_fs_loaded(), why=why,
                 compat=getattr(gds_reader, "kvikio_compat", None) if name == "kvikio" else None)
        if why is not None:
            if world > 1:
                dist.destroy_process_group()
            return 0
        q = queue.Queue(maxsize=args.prefetch)
        threading.Thread(
            target=gds_loader,
            args=(args.data, rank, world, args.batch, args.seq, args.vocab, q, stop, dev, open_shard),
            daemon=True,
        ).start()
    elif args.data != "synthetic":
        q = queue.Queue(maxsize=args.prefetch)
        threading.Thread(
            target=loader,
            args=(args.data, rank, world, args.batch, args.seq, args.vocab, q, stop),
            daemon=True,
        ).start()
    # Synthetic data repeats a few fixed batches, so the loss can fall as it would on text.
    fixed = [torch.randint(0, args.vocab, (args.batch, args.seq + 1), device=dev) for _ in range(4)]

    start = 0
    ck = os.path.join(args.checkpoint, "checkpoint.pt") if args.checkpoint else None
    inner = model.module if world > 1 else model
    if ck and os.path.exists(ck):
        t_restore = time.perf_counter()
        state = torch.load(ck, map_location=dev)
        inner.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = int(state["step"]) + 1
        if rank == 0:
            emit(burnin="checkpoint", action="restore", step=int(state["step"]),
                 ms=round((time.perf_counter() - t_restore) * 1000.0, 1),
                 bytes=os.path.getsize(ck), since_start_ms=round((time.perf_counter() - t0) * 1000.0, 1))

    t_loop = time.perf_counter()
    for step in range(start, args.steps):
        if args.seconds > 0:
            # Every rank must stop at the same step: rank 0 decides, everyone follows.
            done = torch.tensor([1.0 if time.perf_counter() - t_loop >= args.seconds else 0.0], device=dev)
            if world > 1:
                dist.broadcast(done, 0)
            if done.item() > 0:
                break
        torch.cuda.synchronize(dev)
        t_step = time.perf_counter()
        if q is None:
            tokens = fixed[step % len(fixed)]
        elif args.reader == "gds":
            tokens = q.get()
            failed = tokens[1] if isinstance(tokens, tuple) else None
            if world > 1:
                # Every rank ends at the same step when one's loader failed.
                flag = torch.tensor([0.0 if failed else 1.0], device=dev)
                dist.all_reduce(flag, op=dist.ReduceOp.MIN)
                if failed is None and flag.item() == 0:
                    failed = "another rank's loader failed"
            if failed is not None:
                if rank == 0:
                    emit(burnin="gds_reader", reader=name, nvidia_fs=nvidia_fs_loaded(),
                         failed=f"at step {step}: {failed}")
                break
            # Made on the loader's stream, used on this one: the allocator waits for this
            # stream's work before it hands the block out again.
            tokens.record_stream(torch.cuda.current_stream(dev))
        else:
            tokens = torch.from_numpy(q.get()).to(dev, non_blocking=True)
        t_data = time.perf_counter()
        if step == start and rank == 0:
            emit(burnin="first_batch", ms=round((t_data - t0) * 1000.0, 1))
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(tokens[:, :-1])
            loss = nn.functional.cross_entropy(
                logits.float().reshape(-1, args.vocab), tokens[:, 1:].reshape(-1)
            )
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss_value = loss.detach()
        if world > 1:
            dist.all_reduce(loss_value, op=dist.ReduceOp.AVG)
        torch.cuda.synchronize(dev)
        t_end = time.perf_counter()
        if rank == 0:
            step_s = t_end - t_step
            emit(
                burnin="step",
                step=step,
                step_time_ms=round(step_s * 1000.0, 2),
                data_wait_ms=round((t_data - t_step) * 1000.0, 3),
                tokens_per_sec=round(args.batch * args.seq * world / step_s, 1),
                loss=round(float(loss_value), 4),
                world=world,
                **({"numa": args.pin_loader} if args.pin_loader else {}),
                **({"reader": "gds"} if args.reader == "gds" else {}),
            )
        if ck and args.checkpoint_every > 0 and (step + 1) % args.checkpoint_every == 0 and rank == 0:
            # Written whole, then renamed: a job killed mid-save restores the previous one.
            t_save = time.perf_counter()
            os.makedirs(args.checkpoint, exist_ok=True)
            tmp = ck + ".tmp"
            torch.save({"model": inner.state_dict(), "opt": opt.state_dict(), "step": step}, tmp)
            os.replace(tmp, ck)
            emit(burnin="checkpoint", action="save", step=step,
                 ms=round((time.perf_counter() - t_save) * 1000.0, 1), bytes=os.path.getsize(ck))
    stop.set()
    if world > 1:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
