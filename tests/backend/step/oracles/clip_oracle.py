"""torch.nn.utils.clip_grad_norm_(max_norm) on given gradients.
in: list of [grads (list), max_norm (0-dim)]; out: list of [total norm, clipped grads (list)]"""
import sys

import torch

out = []
for grads, max_norm in torch.load(sys.argv[1]):
    params = []
    for g in grads:
        p = torch.nn.Parameter(torch.zeros_like(g))
        p.grad = g.clone()
        params.append(p)
    norm = torch.nn.utils.clip_grad_norm_(params, float(max_norm))
    out.append([norm, [p.grad for p in params]])
torch.save(out, sys.argv[2])
