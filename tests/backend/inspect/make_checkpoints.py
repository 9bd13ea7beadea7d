"""Writes the checkpoints the inspect tests open into OUT_DIR, with real
PyTorch (torch.save; FS_PYTHON, the project's Python environment), and
expected.json: per file, what torch says about each tensor (section, dtype,
shape, bytes, which earlier name it is tied to) and the contiguous bytes of a
few of them as hex.

Usage: make_checkpoints.py OUT_DIR

Files:
  openflamingo.pt   OpenFlamingo's layout: model_state_dict (tied LM head, a
                    transposed view, bf16 / fp16 / int64 / bool tensors),
                    optimizer_state_dict (AdamW after one step), lr scheduler, epoch
  state_dict.bin    a bare state dict, as Hugging Face's pytorch_model.bin
  ours.pt           our layout: the OpenFlamingo keys plus "flamingo_studio" with a
                    manifest (parameters with trainability, tensor hashes)
  openflamingo_train.pt  OpenFlamingo's train.py as saved: trainable weights, a frozen
                    "embed" key it keeps, its duplicate gated_cross_attn_layers
                    reference; AdamW in two groups
                    (gated_cross_attn decayed, the rest not) after three steps, a LambdaLR
                    warmup; expected.json "state" holds torch's figures for it
  sharded/          our sharded layout (docs/run-directory.md): index.json and
                    rank-0.pt / rank-1.pt; fc.weight split across the two files
"""
import json
import os
import sys

import torch

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
torch.manual_seed(0)
expected = {}


def hexbytes(t):
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().tobytes().hex()
    return t.numpy().tobytes().hex()


DTYPES = {torch.float32: "torch.float32", torch.float16: "torch.float16", torch.bfloat16: "torch.bfloat16",
          torch.int64: "torch.int64", torch.bool: "torch.bool", torch.float64: "torch.float64"}


def describe(entries):
    """entries: [(section, name, tensor)] in the order the reader lists them."""
    out, seen = [], {}
    for section, name, t in entries:
        key = (t.untyped_storage().data_ptr() if hasattr(t, "untyped_storage") else t.storage().data_ptr(),
               t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype)
        tied = seen.get(key)
        if tied is None:
            seen[key] = name
        out.append({"section": section, "name": name, "dtype": DTYPES[t.dtype], "shape": list(t.shape),
                    "bytes": t.numel() * t.element_size(), "tied_to": tied, "hex": hexbytes(t)})
    return out


# --- a tiny model, trained one step: the OpenFlamingo layout -----------------------------
emb = torch.nn.Parameter(torch.randn(6, 4))
model = {
    "lang_encoder.embed_tokens.weight": emb,
    "lang_encoder.layers.0.mlp.fc1.weight": torch.nn.Parameter(torch.randn(3, 4)),
    "lang_encoder.layers.0.mlp.fc1.bias": torch.nn.Parameter(torch.zeros(3)),
    "lang_encoder.layers.1.mlp.fc1.weight": torch.randn(4, 3).t(),  # a transposed view
    "lang_encoder.lm_head.weight": emb,  # tied to the embedding: one storage
    "perceiver.latents": torch.randn(2, 4).to(torch.bfloat16),
    "perceiver.norm.weight": torch.ones(4, dtype=torch.float16),
    "vision_encoder.position_ids": torch.arange(5, dtype=torch.int64),
    "vision_encoder.mask": torch.tensor([True, False, True]),
}
trainable = [model["lang_encoder.layers.0.mlp.fc1.weight"], model["lang_encoder.layers.0.mlp.fc1.bias"]]
opt = torch.optim.AdamW(trainable, lr=1e-4, weight_decay=0.1)
(trainable[0].sum() + trainable[1].sum()).backward()
opt.step()
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
state = {k: (v.detach() if isinstance(v, torch.nn.Parameter) else v) for k, v in model.items()}
state["lang_encoder.lm_head.weight"] = state["lang_encoder.embed_tokens.weight"]
ckpt = {"epoch": 2, "model_state_dict": state, "optimizer_state_dict": opt.state_dict(),
        "lr_scheduler_state_dict": sched.state_dict()}
torch.save(ckpt, os.path.join(OUT, "openflamingo.pt"))
model_entries = [("model", k, v) for k, v in state.items()]
opt_entries = []
for pid, s in opt.state_dict()["state"].items():
    for k, v in s.items():
        if torch.is_tensor(v):
            opt_entries.append(("optimizer", "state.%d.%s" % (pid, k), v))
expected["openflamingo.pt"] = {"format": "OpenFlamingo checkpoint", "tensors": describe(model_entries + opt_entries)}

# --- a bare state dict ------------------------------------------------------------------
bare = {"a.weight": torch.randn(2, 3), "a.bias": torch.randn(2), "b.weight": torch.randn(3, 3).to(torch.float64)}
torch.save(bare, os.path.join(OUT, "state_dict.bin"))
expected["state_dict.bin"] = {"format": "torch.save file",
                              "tensors": describe([("model", k, v) for k, v in bare.items()])}

# --- ours: the same plus flamingo_studio with a manifest ----------------------------------
# Every field our engine writes (protocol::CheckpointManifest): readers refuse less.
manifest = {
    "engine_version": "test",
    "lm": {"family": "opt", "width": 4, "layers": 1, "heads": 1, "vocab_size": 4, "tied_head": True},
    "vision": {"path": "tiny-vit", "width": 4, "layers": 1, "patch_size": 8, "image_size": 16},
    "cross_attn_every_n_layers": 1,
    "added_tokens": {"<|endofchunk|>": 4, "<image>": 5},
    "parameters": [{"name": "lang_encoder.embed_tokens.weight", "shape": [6, 4], "trainable": False},
                   {"name": "lang_encoder.layers.0.mlp.fc1.weight", "shape": [3, 4], "trainable": True},
                   {"name": "lang_encoder.layers.0.mlp.fc1.bias", "shape": [3], "trainable": True}],
    "tensors": [{"name": "lang_encoder.layers.0.mlp.fc1.bias", "shape": [3], "dtype": "Float",
                 "hash": "xxh64:0123456789abcdef"}],
}
ours = dict(ckpt)
ours["model_state_dict"] = {k: state[k] for k in ["lang_encoder.embed_tokens.weight",
                                                   "lang_encoder.layers.0.mlp.fc1.weight",
                                                   "lang_encoder.layers.0.mlp.fc1.bias",
                                                   "vision_encoder.position_ids"]}
rng = torch.arange(8, dtype=torch.uint8)
# A data position as protocol::DataPositionRecord has it.
position = json.dumps({"format": 1, "source": "synthetic", "epoch": 1, "rank": 0, "world": 1,
                       "datasets": ["laion"], "batches_consumed": [7], "rng_state": ""})
ours["flamingo_studio"] = {"format": 1, "kind": "step", "step": 7, "iteration": 7, "epoch": 1,
                           "data_position": "{}",  # malformed on purpose: the error-path tests read it
                           "rng_torch_cpu": rng, "rng_torch_cuda": [],
                           "rng_own": [1, 2, 3, 4], "manifest": json.dumps(manifest)}
torch.save(ours, os.path.join(OUT, "ours.pt"))
DTYPES[torch.uint8] = "torch.uint8"
expected["ours.pt"] = {"format": "flamingo-studio checkpoint", "tensors": describe(
    [("model", k, v) for k, v in ours["model_state_dict"].items()] + opt_entries +
    [("other", "flamingo_studio.rng_torch_cpu", rng)])}

# --- ours, sharded over two rank files ----------------------------------------------------
sdir = os.path.join(OUT, "sharded")
os.makedirs(sdir, exist_ok=True)
w = torch.randn(3, 4)  # 12 elements
b = torch.randn(3)     # 3 elements
flat = torch.cat([w.reshape(-1), b, torch.zeros(1)])  # 15 + 1 padding = 16, two shards of 8
ea, eas = torch.randn(16), torch.rand(16)
buf = torch.arange(4, dtype=torch.int64)
for s in range(2):
    part = slice(8 * s, 8 * (s + 1))
    rank = {"format": "flamingo_studio.sharded_rank", "version": 1, "shard": s, "shard_group_size": 2,
            "shards": {"(root)#0": flat[part].clone()},
            "optimizer": {"(root)#0": {"step": torch.tensor(1.0), "exp_avg": ea[part].clone(),
                                       "exp_avg_sq": eas[part].clone()}},
            "hashes": {}}
    if s == 0:
        rank["buffers"] = {"pos": buf}
    torch.save(rank, os.path.join(sdir, "rank-%d.pt" % s))
index = {
    "format": "flamingo_studio.sharded_checkpoint", "version": 1, "world_size": 2, "strategy": "full_shard",
    "shard_group_size": 2, "files": ["rank-0.pt", "rank-1.pt"],
    "units": [{"path": "(root)", "flats": [{
        "key": "(root)#0", "trainable": True, "dtype": "Float", "numel": 15, "padding": 1, "shard_numel": 8,
        "optimizer_state": True,
        "members": [{"name": "fc.weight", "shape": [3, 4], "offset": 0, "numel": 12},
                    {"name": "fc.bias", "shape": [3], "offset": 12, "numel": 3}]}]}],
    "parameter_order": ["fc.weight", "fc.bias"], "buffers": ["pos"],
    "optimizer": {"param_groups": [{"lr": 0.1, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.0,
                                    "amsgrad": False, "maximize": False, "capturable": False,
                                    "params": [0, 1], "param_names": ["fc.weight", "fc.bias"]}]},
    "lr_scheduler": {"base_lrs": [0.1], "last_epoch": 1, "_step_count": 2, "verbose": False,
                     "_get_lr_called_within_step": False, "_last_lr": [0.1]},
    "epoch": 0,
    "resume": {"kind": "step", "step": 1, "iteration": 1, "epoch": 0, "data_position": position,
               "rng_torch_cpu": "00", "rng_torch_cuda": [], "rng_own": [1, 2, 3, 4],
               "manifest": json.dumps({k: v for k, v in manifest.items() if k != "tensors"})},
}
with open(os.path.join(sdir, "index.json"), "w") as f:
    json.dump(index, f, indent=1)
expected["sharded"] = {"format": "flamingo-studio sharded checkpoint", "tensors": [
    {"section": "model", "name": "fc.weight", "hex": hexbytes(w), "shape": [3, 4]},  # spans both rank files
    {"section": "model", "name": "fc.bias", "hex": hexbytes(b), "shape": [3]},
    {"section": "optimizer", "name": "state.1.exp_avg", "hex": hexbytes(ea[12:15]), "shape": [3]},
    {"section": "model", "name": "pos", "hex": hexbytes(buf), "shape": [4]},
]}

# --- two checkpoints to diff --------------------------------------------------------------
emb_a = torch.randn(10, 4)
emb_b = emb_a.clone()
emb_b[3] += 0.5
emb_b[7, 1] = -2.0
w_a = torch.randn(5, 3)
w_b = w_a + 0.01 * torch.randn(5, 3)
h_a = torch.randn(6).to(torch.bfloat16)
h_b = (h_a.float() * 1.5).to(torch.bfloat16)
same = torch.randn(4)
da = {"emb": emb_a, "w": w_a, "h": h_a, "same": same, "gone": torch.ones(2), "shape": torch.zeros(2, 3)}
db = {"emb": emb_b, "w": w_b, "h": h_b, "same": same.clone(), "new": torch.ones(3), "shape": torch.zeros(3, 2)}
torch.save(da, os.path.join(OUT, "diff_a.pt"))
torch.save(db, os.path.join(OUT, "diff_b.pt"))


def figures(a, b):
    a, b = a.double(), b.double()
    d = b - a
    changed = (a != b)
    out = {"max_abs": d.abs().max().item(), "relative": (d.norm() / a.norm()).item(),
           "cosine": (torch.dot(a.flatten(), b.flatten()) / (a.norm() * b.norm())).item(),
           "changed": int(changed.sum().item())}
    if a.dim() == 2:
        out["rows"] = [int(r) for r in changed.any(dim=1).nonzero().flatten().tolist()]
    return out


expected["diff"] = {"emb": figures(emb_a, emb_b), "w": figures(w_a, w_b), "h": figures(h_a, h_b),
                    "same": figures(same, same)}

# --- OpenFlamingo's train.py layout with real optimizer and scheduler state ---------------
named = [  # model order; the embedding is trainable (freeze_lm_embeddings false)
    ("perceiver.latents", torch.nn.Parameter(torch.randn(2, 4))),
    ("lang_encoder.model.embed_tokens.weight", torch.nn.Parameter(torch.randn(6, 4))),
    ("lang_encoder.model.layers.0.gated_cross_attn_layer.attn_gate", torch.nn.Parameter(torch.tensor([0.3]))),
    ("lang_encoder.model.layers.0.gated_cross_attn_layer.ff.1.weight", torch.nn.Parameter(torch.randn(8, 4))),
    ("lang_encoder.model.layers.0.decoder_layer.mlp.up_proj.weight", torch.randn(8, 4)),  # frozen
]
params = {n: p for n, p in named if isinstance(p, torch.nn.Parameter)}
decay = [p for n, p in params.items() if "gated_cross_attn" in n]
no_decay = [p for n, p in params.items() if "gated_cross_attn" not in n]
opt2 = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                         lr=2e-4, betas=(0.9, 0.95), eps=1e-7)
sched2 = torch.optim.lr_scheduler.LambdaLR(opt2, lambda s: min(1.0, (s + 1) / 5))
x = torch.randn(4)
for _ in range(3):
    opt2.zero_grad()
    loss = sum((p * p).sum() * (i + 1) for i, p in enumerate(params.values())) + (params["perceiver.latents"] @ x).sum()
    loss.backward()
    opt2.step()
    sched2.step()
sd = {}
for n, p in named:
    if isinstance(p, torch.nn.Parameter):
        sd[n] = p.detach()
    if n == "lang_encoder.model.embed_tokens.weight":  # train.py keeps every "embed" key, frozen ones too
        sd["lang_encoder.model.embed_positions.weight"] = torch.randn(6, 4)
sd["lang_encoder.gated_cross_attn_layers.0.attn_gate"] = sd["lang_encoder.model.layers.0.gated_cross_attn_layer.attn_gate"]
torch.save({"epoch": 4, "model_state_dict": sd, "optimizer_state_dict": opt2.state_dict(),
            "lr_scheduler_state_dict": sched2.state_dict()}, os.path.join(OUT, "openflamingo_train.pt"))
ids = [id(p) for p in decay + no_decay]
names_by_id = {id(p): n for n, p in params.items()}
osd = opt2.state_dict()
state_params = []
for pid, st in sorted(osd["state"].items()):
    p = (decay + no_decay)[pid]
    state_params.append({"id": pid, "name": names_by_id[id(p)], "group": 0 if pid < len(decay) else 1,
                         "step": float(st["step"]), "exp_avg_norm": st["exp_avg"].double().norm().item(),
                         "exp_avg_sq_norm": st["exp_avg_sq"].double().norm().item()})
expected["state"] = {
    "epoch": 4,
    "groups": [{"lr": g["lr"], "weight_decay": g["weight_decay"], "betas": list(g["betas"]), "eps": g["eps"],
                "initial_lr": g["initial_lr"], "params": len(g["params"])} for g in osd["param_groups"]],
    "params": state_params,
    "scheduler": {k: sched2.state_dict()[k] for k in ["last_epoch", "_step_count", "base_lrs", "_last_lr"]},
}

with open(os.path.join(OUT, "expected.json"), "w") as f:
    json.dump(expected, f, indent=1)
