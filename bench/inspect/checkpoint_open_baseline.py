"""The Python side of bench_checkpoint_open: torch.load of a torch.save file,
its time and how much resident memory it adds.

Usage: checkpoint_open_baseline.py FILE [runs=5]
       checkpoint_open_baseline.py --write FILE [GiB=1.0]
--write makes an OpenFlamingo-layout checkpoint of about GiB bytes: a
model_state_dict of 24 blocks of fp32 matrices, biases and norms (about 300
tensors), Adam state (step, exp_avg, exp_avg_sq) for a trainable third of them,
param_groups, an lr scheduler state and the epoch.
Run with OMP_NUM_THREADS=1 (torch.set_num_threads(1) is called too).
"""
import resource
import statistics
import sys
import time

import torch

torch.set_num_threads(1)


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def write(path, gib):
    g = torch.Generator().manual_seed(0)
    # Per block: 4 d x d + 2 d x 4d matrices = 12 d^2 floats; 24 blocks; plus
    # Adam's two moments for every third block: 12 d^2 * 4 B * (24 + 2 * 8).
    d = -(-int(((gib * (1 << 30)) / (4 * 12 * (24 + 16))) ** 0.5) // 64) * 64  # at least GiB
    model, trainable = {}, []
    for b in range(24):
        p = f"lang_encoder.gpt_neox.layers.{b}."
        shapes = {"attention.query_key_value.weight": (3 * d, d), "attention.dense.weight": (d, d),
                  "mlp.dense_h_to_4h.weight": (4 * d, d), "mlp.dense_4h_to_h.weight": (d, 4 * d),
                  "attention.query_key_value.bias": (3 * d,), "attention.dense.bias": (d,),
                  "input_layernorm.weight": (d,), "input_layernorm.bias": (d,),
                  "post_attention_layernorm.weight": (d,), "post_attention_layernorm.bias": (d,),
                  "mlp.dense_h_to_4h.bias": (4 * d,), "mlp.dense_4h_to_h.bias": (d,)}
        for name, shape in shapes.items():
            model[p + name] = torch.randn(*shape, generator=g)
            if b % 3 == 0:
                trainable.append(p + name)
    state = {i: {"step": torch.tensor(100.0), "exp_avg": torch.randn(model[n].shape, generator=g),
                 "exp_avg_sq": torch.rand(model[n].shape, generator=g)} for i, n in enumerate(trainable)}
    groups = [{"lr": 1e-4, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.1, "amsgrad": False,
               "params": list(range(len(trainable)))}]
    torch.save({"epoch": 2, "model_state_dict": model,
                "optimizer_state_dict": {"state": state, "param_groups": groups},
                "lr_scheduler_state_dict": {"last_epoch": 100, "base_lrs": [1e-4], "_last_lr": [1e-4]}}, path)


def count(value):
    if isinstance(value, torch.Tensor):
        return 1, value.numel() * value.element_size()
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        n = b = 0
        for v in value:
            vn, vb = count(v)
            n, b = n + vn, b + vb
        return n, b
    return 0, 0


if sys.argv[1] == "--write":
    write(sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 1.0)
    sys.exit(0)

path = sys.argv[1]
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
times, grown = [], []
for _ in range(runs):
    before = rss_bytes()
    t0 = time.perf_counter()
    ckpt = torch.load(path)
    times.append(time.perf_counter() - t0)
    grown.append(rss_bytes() - before)
    tensors, nbytes = count(ckpt)
    del ckpt
med = statistics.median(times)
print(f"torch.load: {tensors} tensors, {nbytes / 2**30:.3f} GiB, {runs} runs, median {med:.3f} s "
      f"(min {min(times):.3f}), RSS +{grown[0] / 2**20:.1f} MiB on the first load (torch {torch.__version__})")
print(f"torch_median_s={med:.6f}")
