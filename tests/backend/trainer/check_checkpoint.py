"""Reads a Flamingo Studio checkpoint with real PyTorch (FS_PYTHON) and prints
what OpenFlamingo's loader would see, as JSON: keys, the model state's
names/shapes/sums, optimizer and scheduler state."""
import json
import sys

import torch

ck = torch.load(sys.argv[1], map_location="cpu", weights_only=True)  # as torch.load does by default since 2.6
msd = ck["model_state_dict"]
out = {
    "keys": sorted(ck.keys()),
    "epoch": ck["epoch"],
    "model": {k: {"shape": list(v.shape), "dtype": str(v.dtype), "sum": float(v.double().sum())} for k, v in msd.items()},
    "optimizer_state": len(ck["optimizer_state_dict"]["state"]),
    "param_groups": [
        {k: (v if not isinstance(v, tuple) else list(v)) for k, v in g.items()}
        for g in ck["optimizer_state_dict"]["param_groups"]
    ],
    "scheduler": {k: v for k, v in ck["lr_scheduler_state_dict"].items() if k != "lr_lambdas"},
}
# OpenFlamingo resumes with optimizer.load_state_dict: prove the layout is accepted.
params = []
for g in ck["optimizer_state_dict"]["param_groups"]:
    for _ in g["params"]:
        params.append(None)
state = ck["optimizer_state_dict"]["state"]
tensors = [torch.nn.Parameter(torch.zeros_like(state[i]["exp_avg"])) for i in sorted(state)]
opt = torch.optim.AdamW(
    [{"params": tensors[: len(ck["optimizer_state_dict"]["param_groups"][0]["params"])]},
     {"params": tensors[len(ck["optimizer_state_dict"]["param_groups"][0]["params"]):]}]
)
opt.load_state_dict(ck["optimizer_state_dict"])
out["optimizer_loaded"] = True
print(json.dumps(out))
