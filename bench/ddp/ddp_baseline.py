#!/usr/bin/python3
"""Python DDP baseline for bench/ddp: torch.nn.parallel.DistributedDataParallel
on Gloo around the PyTorch-eager model and step of bench/train_step_baseline.py.

Written by us, for comparison with our engine's DDP (`flamingo-train launch
--nproc-per-node 2 -- train`). Each rank runs 1 intra-op thread and the same
per-rank batch as one process of the engine benchmark (tiny: 4 LAION + 2 MMC4,
small: 8 LAION + 4 MMC4), its own synthetic batches (seed 42 + rank), generated
before the timed loop.

The step is train_step_baseline.py's (labels, forward, shifted cross-entropy,
backward per dataset; embedding-gradient row mask, global clipping, AdamW with
the two groups, schedule), with DDP as it is used well: the first dataset's
backward runs under `no_sync()` and the last one's all-reduces the summed
gradients in DDP's buckets, overlapped with that backward; so one gradient
all-reduce per step, as our engine does. Row mask and clipping act on the
reduced gradients.

Timed phases, alternating in blocks of half the steps so drift hits both:
  ddp     - the step as above (what we compare with)
  no_sync - the same step with both backwards under no_sync(): no all-reduce;
            ddp - no_sync = the all-reduce overhead DDP could not hide (plus the
            wait for the slower rank that a synchronising step includes).
Samples/s = world x samples per rank per step / rank 0's median step time.

Usage: ddp_baseline.py PRESET [WARMUP=5] [STEPS=30] [--nproc 2] [--port 29560] [--ddp-only]
  Without RANK in the environment it starts --nproc ranks of itself (as
  torchrun would) and prints rank 0's result line; under torchrun it is one rank.
  Set OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=1 (and OMP_WAIT_POLICY=PASSIVE) in the
  environment; each rank also calls torch.set_num_threads(1).
"""
import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import train_step_baseline as base  # noqa: E402  (model, batches, labels, schedule: not duplicated here)


def parse():
    ap = argparse.ArgumentParser()
    ap.add_argument("preset", choices=sorted(base.PRESETS))
    ap.add_argument("warmup", nargs="?", type=int, default=5)
    ap.add_argument("steps", nargs="?", type=int, default=30)
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--port", type=int, default=29560)
    ap.add_argument("--ddp-only", action="store_true", help="skip the no_sync phase")
    return ap.parse_args()


def launch(args):
    """Start args.nproc ranks of this script with torchrun's variables; print rank 0's output."""
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port), WORLD_SIZE=str(args.nproc),
               LOCAL_WORLD_SIZE=str(args.nproc))
    procs = []
    for r in range(args.nproc):
        e = dict(env, RANK=str(r), LOCAL_RANK=str(r))
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__)] + sys.argv[1:], env=e,
                                      stdout=subprocess.PIPE if r == 0 else subprocess.DEVNULL))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("ddp_baseline: terminated"))  # e.g. by `timeout`
    try:
        out = procs[0].communicate()[0].decode()
        codes = [p.wait() for p in procs]
    finally:
        for p in procs:  # no rank outlives the launcher
            if p.poll() is None:
                p.kill()
    sys.stdout.write(out)
    if any(codes):
        sys.exit(f"ddp_baseline: rank exit codes {codes}")


def run(args):
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world)
    p = base.PRESETS[args.preset]
    torch.manual_seed(42)  # same initial weights everywhere (DDP also broadcasts rank 0's)
    model = base.Flamingo(p)
    model.freeze_as_openflamingo()
    model.train()
    ddp = DDP(model)  # defaults: 25 MB buckets, broadcast at construction, no unused-parameter search
    torch.manual_seed(42 + rank)  # dropout differs per rank, as in the engine (seed + rank)
    trainer = base.Trainer(model, p, forward=ddp)
    pool = base.batch_pool(p, 42 + rank)
    samples_per_step = p["laion"]["batch"] + p["mmc4"]["batch"]

    def train_step(batches, sync):
        # One gradient all-reduce per step, as DDP is used well: every backward but the last under no_sync().
        trainer.train_step(batches, lambda last: contextlib.nullcontext() if sync and last else ddp.no_sync())

    it = 0

    def timed(n, sync):
        nonlocal it
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            train_step(pool[it % len(pool)], sync)
            out.append(time.perf_counter() - t0)
            it += 1
        return out

    timed(args.warmup, True)
    t_ddp, t_nosync = [], []
    half = max(1, args.steps // 2)
    for block in (0, 1):
        n = half if block == 0 else args.steps - half
        if n <= 0:
            continue
        t_ddp += timed(n, True)
        if not args.ddp_only:
            dist.barrier()  # start the unsynchronised block aligned
            t_nosync += timed(n, False)
            dist.barrier()  # and let the next synchronising block start aligned too
    dist.barrier()
    if rank == 0:
        med = statistics.median(t_ddp)
        line = (f"python_ddp preset={args.preset} world={world} threads=1 warmup={args.warmup} steps={len(t_ddp)} "
                f"median_step_ms={med * 1e3:.3f} min_step_ms={min(t_ddp) * 1e3:.3f} "
                f"max_step_ms={max(t_ddp) * 1e3:.3f} samples_per_s={world * samples_per_step / med:.2f}")
        if t_nosync:
            mn = statistics.median(t_nosync)
            line += f" nosync_median_step_ms={mn * 1e3:.3f} allreduce_overhead_ms={(med - mn) * 1e3:.3f}"
        print(line, flush=True)
    dist.destroy_process_group()


def main():
    args = parse()
    if "RANK" in os.environ:
        run(args)
    else:
        launch(args)


if __name__ == "__main__":
    main()
