"""transformers' get_{constant,linear,cosine}_schedule_with_warmup (the pinned
transformers), as OpenFlamingo's train.py builds its LambdaLR: the lr after
each scheduler step, for base lr 1.0.
in: (N, 4) int64 rows [kind (0 constant, 1 linear, 2 cosine), warmup, total, steps]
out: list of (steps,) float64 tensors: the lr after s = 0 .. steps-1 scheduler steps"""
import os
import sys

os.environ["HF_HUB_OFFLINE"] = "1"

import torch  # noqa: E402
from transformers import (  # noqa: E402
    get_constant_schedule_with_warmup,
    get_cosine_schedule_with_warmup,
    get_linear_schedule_with_warmup,
)


def lrs(kind, warmup, total, steps):
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    if kind == 0:
        sched = get_constant_schedule_with_warmup(opt, num_warmup_steps=warmup)
    elif kind == 1:
        sched = get_linear_schedule_with_warmup(opt, num_warmup_steps=warmup, num_training_steps=total)
    else:
        sched = get_cosine_schedule_with_warmup(opt, num_warmup_steps=warmup, num_training_steps=total)
    out = []
    for _ in range(steps):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return torch.tensor(out, dtype=torch.float64)


cases = torch.load(sys.argv[1])
torch.save([lrs(*[int(v) for v in row.tolist()]) for row in cases], sys.argv[2])
