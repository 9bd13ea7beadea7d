"""The Python side of bench_tensor_stats: torch.load + aminmax / mean / std /
norm / zero, NaN and Inf counts / histc over every tensor of a torch.save file.

Usage: tensor_stats_baseline.py FILE [runs=5] [bins=100]
       tensor_stats_baseline.py --write FILE [GiB=1.0]   (one fp32 tensor, N(0,1))
Run with OMP_NUM_THREADS=1 (torch.set_num_threads(1) is called too).
"""
import statistics
import sys
import time

import torch

torch.set_num_threads(1)

if sys.argv[1] == "--write":
    gib = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
    n = int(gib * (1 << 30)) // 4
    g = torch.Generator().manual_seed(0)
    torch.save({"weight": torch.randn(n // 4096, 4096, generator=g)}, sys.argv[2])
    sys.exit(0)

path = sys.argv[1]
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
bins = int(sys.argv[3]) if len(sys.argv) > 3 else 100
times = []
for _ in range(runs):
    t0 = time.perf_counter()
    sd = torch.load(path)
    out = []
    for t in sd.values():
        lo, hi = torch.aminmax(t)
        out.append((lo.item(), hi.item(), t.mean().item(), t.std().item(), t.norm().item(),
                    int((t == 0).sum()), int(t.isnan().sum()), int(t.isinf().sum()),
                    torch.histc(t, bins, lo.item(), hi.item())[0].item()))
    times.append(time.perf_counter() - t0)
    del sd
nbytes = sum(t.numel() * t.element_size() for t in torch.load(path).values())
med = statistics.median(times)
print(f"torch: {nbytes / 2**30:.3f} GiB, {runs} runs, median {med:.3f} s (min {min(times):.3f}), "
      f"{nbytes / med / 1e9:.2f} GB/s (torch {torch.__version__}, {torch.get_num_threads()} thread)")
print("torch: min %.9g max %.9g mean %.9g std %.9g norm %.9g zeros %d nan %d inf %d hist[0] %d" % out[0])
print(f"torch_median_s={med:.6f}")
