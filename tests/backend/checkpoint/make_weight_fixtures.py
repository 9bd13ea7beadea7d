"""Weight files as Python writes them, for weights_test.cpp.

usage: make_weight_fixtures.py SPEC_JSON OUT_DIR

SPEC_JSON (written by the C++ test from the tiny model) holds the vision tower
and checkpoint names/shapes and the optimizer groups; the Hugging Face OPT
names are written out here, from the parameter-name contract (they are HF's).

Every tensor's value is value(k, shape): arange(numel) * 1e-3 + 0.01 * (k + 1),
float32, where k is the name's index in sorted order of its file's names; the
C++ test recomputes the same.

Writes:
  lm_bin/pytorch_model.bin       torch.save of the HF OPT state dict; lm_head.weight
                                 shares embed_tokens' storage; fc1 weights are
                                 transposed views, fc2 weights views at an offset
  lm_st/model.safetensors        the same (no lm_head), by safetensors' save_file; final layer norms as F64
  lm_base/model.safetensors      names without "model." (facebook/opt-* are saved so)
  lm_sharded/                    model.safetensors.index.json + two shards
  lm_wrong/pytorch_model.bin     layer 0 fc1.weight of shape (48, 32)
  open_clip.bin                  OpenCLIP checkpoint {"epoch", "state_dict": {"module.visual.*", text tower}}
  openflamingo.pt                {epoch: 0, model_state_dict ("module." keys), optimizer_state_dict,
                                  lr_scheduler_state_dict} with lr 0 everywhere
  openflamingo_badopt.pt         the same with a mis-shaped exp_avg
  released.pt                    a bare state dict (OpenFlamingo's released checkpoint.pt)
"""
import json
import os
import sys

import torch
from safetensors.torch import save_file

WIDTH, FFN, VOCAB, LAYERS, MAX_POS = 32, 64, 128, 2, 128


def value(k, shape):
    n = 1
    for s in shape:
        n *= s
    return (torch.arange(n, dtype=torch.float64) * 1e-3 + 0.01 * (k + 1)).float().reshape(shape)


def opt_names():
    d = WIDTH
    names = {
        "model.decoder.embed_tokens.weight": [VOCAB, d],
        "model.decoder.embed_positions.weight": [MAX_POS + 2, d],
        "model.decoder.final_layer_norm.weight": [d],
        "model.decoder.final_layer_norm.bias": [d],
    }
    for i in range(LAYERS):
        p = f"model.decoder.layers.{i}."
        for proj in ("k_proj", "v_proj", "q_proj", "out_proj"):
            names[p + f"self_attn.{proj}.weight"] = [d, d]
            names[p + f"self_attn.{proj}.bias"] = [d]
        for ln in ("self_attn_layer_norm", "final_layer_norm"):
            names[p + ln + ".weight"] = [d]
            names[p + ln + ".bias"] = [d]
        names[p + "fc1.weight"] = [FFN, d]
        names[p + "fc1.bias"] = [FFN]
        names[p + "fc2.weight"] = [d, FFN]
        names[p + "fc2.bias"] = [d]
    return names


def with_values(names):
    return {n: value(k, names[n]) for k, n in enumerate(sorted(names))}


def write_safetensors(path, tensors, f64=()):
    """safetensors' own writer (it was a hand-written one: issue 41 item 7); names in f64 as float64."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    save_file({n: (t.double() if n in f64 else t).contiguous() for n, t in tensors.items()}, path,
              metadata={"format": "pt"})


def strided(sd):
    """Same values, other layouts: transposed views, views at a storage offset."""
    out = dict(sd)
    for name, t in sd.items():
        if name.endswith("fc1.weight"):
            out[name] = t.t().contiguous().t()
            assert not out[name].is_contiguous()
        elif name.endswith("fc2.weight"):
            big = torch.zeros(t.numel() + 7)
            big[7:] = t.flatten()
            out[name] = big[7:].view(t.shape)
            assert out[name].storage_offset() == 7
    return out


def main():
    spec = json.load(open(sys.argv[1]))
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)

    lm = with_values(opt_names())
    # (a) HF directory, torch.save; tied head shares the embedding's storage.
    bin_sd = strided(lm)
    bin_sd["lm_head.weight"] = bin_sd["model.decoder.embed_tokens.weight"]
    os.makedirs(os.path.join(out, "lm_bin"), exist_ok=True)
    torch.save(bin_sd, os.path.join(out, "lm_bin", "pytorch_model.bin"))
    json.dump({"model_type": "opt"}, open(os.path.join(out, "lm_bin", "config.json"), "w"))
    # safetensors variants
    f64 = {n for n in lm if n.endswith("final_layer_norm.weight")}
    write_safetensors(os.path.join(out, "lm_st", "model.safetensors"), lm, f64)
    write_safetensors(os.path.join(out, "lm_base", "model.safetensors"),
                      {n[len("model."):]: t for n, t in lm.items()})
    names = sorted(lm)
    half = len(names) // 2
    shards = {"model-00001-of-00002.safetensors": names[:half], "model-00002-of-00002.safetensors": names[half:]}
    weight_map = {}
    for shard, ns in shards.items():
        write_safetensors(os.path.join(out, "lm_sharded", shard), {n: lm[n] for n in ns})
        weight_map.update({n: shard for n in ns})
    json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map},
              open(os.path.join(out, "lm_sharded", "model.safetensors.index.json"), "w"))
    wrong = dict(lm)
    wrong["model.decoder.layers.0.fc1.weight"] = torch.zeros(48, WIDTH)
    os.makedirs(os.path.join(out, "lm_wrong"), exist_ok=True)
    torch.save(wrong, os.path.join(out, "lm_wrong", "pytorch_model.bin"))

    # OpenCLIP checkpoint as open_clip's training writes it (DDP prefix), with a text tower.
    vis = with_values({"visual." + n: s for n, s in spec["vision"].items()})
    clip = {"module." + n: t for n, t in vis.items()}
    clip["module.token_embedding.weight"] = torch.zeros(10, 4)
    clip["module.logit_scale"] = torch.tensor(4.6)
    torch.save({"epoch": 32, "name": "tiny", "state_dict": clip}, os.path.join(out, "open_clip.bin"))

    # OpenFlamingo training checkpoint (train_utils.save_checkpoint).
    model_sd = with_values(spec["checkpoint"])
    groups, state, index = [], {}, 0
    for g, shapes in enumerate(spec["groups"]):
        params = []
        for shape in shapes:
            state[index] = {"step": torch.tensor(3.0), "exp_avg": torch.full(shape, 0.5),
                            "exp_avg_sq": torch.full(shape, 0.25)}
            params.append(index)
            index += 1
        groups.append({"lr": 0.0, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.1 if g == 0 else 0.0,
                       "amsgrad": False, "foreach": None, "maximize": False, "capturable": False,
                       "initial_lr": 0.0, "params": params})
    ckpt = {
        "epoch": 0,
        "model_state_dict": {"module." + n: t for n, t in model_sd.items()},
        "optimizer_state_dict": {"state": state, "param_groups": groups},
        "lr_scheduler_state_dict": {"base_lrs": [0.0] * len(groups), "last_epoch": 3, "verbose": False,
                                    "_step_count": 4, "_get_lr_called_within_step": False,
                                    "_last_lr": [0.0] * len(groups), "lr_lambdas": [None] * len(groups)},
    }
    torch.save(ckpt, os.path.join(out, "openflamingo.pt"))
    state[0]["exp_avg"] = torch.zeros(3, 3)
    torch.save(ckpt, os.path.join(out, "openflamingo_badopt.pt"))
    torch.save(model_sd, os.path.join(out, "released.pt"))


if __name__ == "__main__":
    main()
