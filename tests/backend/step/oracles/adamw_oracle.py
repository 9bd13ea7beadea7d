"""torch.optim.AdamW with two param groups (weight decay / none), driven by
given gradients, zero_grad(set_to_none=True) between steps.
in: [params0 (list), params1 (list), grads (list of steps, each a list of
     tensors or None per param in group order), [lr, beta1, beta2, eps, wd]]
out: [final params (list), exp_avg (list), exp_avg_sq (list), steps (list)]"""
import sys

import torch

params0, params1, grads, hyper = torch.load(sys.argv[1])
lr, b1, b2, eps, wd = [float(x) for x in hyper.tolist()]
g0 = [torch.nn.Parameter(p.clone()) for p in params0]
g1 = [torch.nn.Parameter(p.clone()) for p in params1]
opt = torch.optim.AdamW([{"params": g0, "weight_decay": wd}, {"params": g1, "weight_decay": 0.0}],
                        lr=lr, betas=(b1, b2), eps=eps)
flat = g0 + g1
for step in grads:
    for p, g in zip(flat, step):
        p.grad = None if g is None or g.numel() == 0 else g.clone()
    opt.step()
    opt.zero_grad(set_to_none=True)
sd = opt.state_dict()
zeros = torch.zeros(0)
out = [[p.detach() for p in flat],
       [sd["state"][i]["exp_avg"] if i in sd["state"] else zeros for i in range(len(flat))],
       [sd["state"][i]["exp_avg_sq"] if i in sd["state"] else zeros for i in range(len(flat))],
       [sd["state"][i]["step"] if i in sd["state"] else torch.tensor(-1.0) for i in range(len(flat))]]
torch.save(out, sys.argv[2])
