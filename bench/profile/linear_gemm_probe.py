#!/usr/bin/env python3
"""MKL's sgemm (torch.addmm) against oneDNN's matmul (torch.ops.mkldnn._linear_pointwise) on the
linear-layer shapes of bench/configs/compare.yaml (M tokens x K in -> N out), in the project's torch.

Usage: OMP_NUM_THREADS=T MKL_NUM_THREADS=T PYTHON bench/profile/linear_gemm_probe.py T
Prints each shape's time per call (the median of 5 runs of 200 calls) and GF/s for both.
"""
import sys
import time

import torch

# (M, K, N). At MMC4's ~400 real tokens: the LM's FFN up and down, a 3 x 128 projection; at LAION's
# ~160: FFN up; at 12 images x 65 ViT tokens: qkv and MLP down; a 514-word head over 400 rows.
SHAPES = [
    (400, 128, 512), (400, 512, 128), (400, 128, 384), (160, 128, 512),
    (780, 128, 384), (780, 512, 128), (400, 128, 514),
]


def per_call(f, calls=200, runs=5):
    for _ in range(20):
        f()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        for _ in range(calls):
            f()
        times.append((time.perf_counter() - t) / calls)
    return sorted(times)[runs // 2]


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    torch.set_num_threads(threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    for m, k, n in SHAPES:
        x, w, b = torch.randn(m, k), torch.randn(n, k), torch.randn(n)
        mkl = per_call(lambda: torch.addmm(b, x, w.t()))
        dnnl = per_call(lambda: torch.ops.mkldnn._linear_pointwise(x, w, b, "none", [], ""))
        flops = 2 * m * n * k
        print(f"{m}x{k}x{n}: mkl {mkl * 1e6:.1f} us {flops / mkl / 1e9:.0f} GF/s  "
              f"onednn {dnnl * 1e6:.1f} us {flops / dnnl / 1e9:.0f} GF/s  mkl/onednn {mkl / dnnl:.2f}")


if __name__ == "__main__":
    main()
