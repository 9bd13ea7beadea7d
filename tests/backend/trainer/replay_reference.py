#!/usr/bin/env python3
"""Python side of the replay test: OpenFlamingo's training step in plain torch.

usage:
  replay_reference.py make ROOT
    ROOT/seed.pt (torch.load-able: {"init": {name: tensor}, "batches": [...]}) and
    ROOT/config.json (model shape as flamingo_reference.py reads it, plus the
    step's hyperparameters) ->
    ROOT/reference.pt      torch.save of {"init", "batches"}: what a user hands to replay
    ROOT/expected_losses.txt  one line per iteration: "<laion> <mmc4>" (repr floats)
    ROOT/expected_params.pt   torch.save of the trainable parameters after the last step
  replay_reference.py check ROOT OUT
    torch.load(OUT) must hold exactly the trainable names of expected_params.pt, with
    every value within the tolerance; prints the largest difference.

The step, as OpenFlamingo's train_one_epoch runs it (grad accumulation 1): per
dataset (LAION, then MMC4) forward, label masking, HF's shifted cross-entropy,
backward of loss * multiplier; the input-embedding gradient row mask (only
<image> and <|endofchunk|> rows learn); torch.nn.utils.clip_grad_norm_(1.0);
torch.optim.AdamW with weight decay on names containing "gated_cross_attn";
LambdaLR with the warmup schedule; zero_grad. The model is
tests/backend/model/flamingo_reference.py's independent forward pass.
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "model"))
import flamingo_reference as ref  # noqa: E402

torch.set_grad_enabled(True)  # flamingo_reference turns it off for its own use


def trainable(name, c):
    if name.startswith("perceiver.") or ".gated_cross_attn_layer." in name:
        return True
    return name == c["input_embedding"] and not c["freeze_lm_embeddings"]


def laion_labels(ids, c):
    labels = ids.clone()
    labels[ids == c["pad_id"]] = -100
    labels[ids == c["image_id"]] = -100
    return labels


def mmc4_labels(ids, c):
    labels = ids.clone()
    labels[ids == c["pad_id"]] = -100
    for b in range(ids.shape[0]):
        row = ids[b].tolist()
        i = 0
        while i < len(row) and row[i] != c["image_id"]:  # before the first <image>
            labels[b, i] = -100
            i += 1
        for e in [j for j, t in enumerate(row) if t == c["endofchunk_id"]]:  # after each chunk end
            j = e + 1
            while j < len(row) and row[j] != c["image_id"]:
                labels[b, j] = -100
                j += 1
    labels[ids == c["image_id"]] = -100
    return labels


def lr_lambda(c):
    w, t, kind = c["warmup_steps"], c["scheduler_steps"], c["scheduler"]

    def f(s):
        if s < w:
            return s / max(1, w)
        if kind == "linear":
            return max(0.0, (t - s) / max(1, t - w))
        if kind == "cosine":
            return max(0.0, 0.5 * (1.0 + math.cos(math.pi * (s - w) / max(1, t - w))))
        return 1.0
    return f


def make(root):
    with open(os.path.join(root, "config.json")) as f:
        c = json.load(f)
    seed = torch.load(os.path.join(root, "seed.pt"))
    init = {k: v.clone() for k, v in seed["init"].items()}
    batches = [{k: tuple(t.clone() for t in v) for k, v in step.items()} for step in seed["batches"]]
    torch.save({"init": init, "batches": batches}, os.path.join(root, "reference.pt"))

    P = {k: v.clone().requires_grad_(trainable(k, c)) for k, v in init.items()}
    named = [(k, p) for k, p in P.items() if p.requires_grad]
    decay = [p for k, p in named if "gated_cross_attn" in k]
    rest = [p for k, p in named if "gated_cross_attn" not in k]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": c["weight_decay"]},
                             {"params": rest, "weight_decay": 0.0}],
                            lr=c["lr"], betas=(c["beta1"], c["beta2"]), eps=c["eps"])
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(c))
    emb = P[c["input_embedding"]]
    lines = []
    for step in batches:
        losses = []
        for kind, labels_of in (("laion", laion_labels), ("mmc4", mmc4_labels)):
            images, ids, mask = step[kind]
            logits = ref.flamingo(P, c, images.float(), ids.long(), mask.long())
            labels = labels_of(ids.long(), c)
            V = logits.shape[-1]
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, V), labels[:, 1:].reshape(-1), ignore_index=-100)
            losses.append(loss.item())
            (loss * c["loss_multiplier_" + kind]).backward()
        if emb.requires_grad and emb.grad is not None:
            keep = torch.zeros_like(emb.grad)
            keep[c["image_id"]] = 1
            keep[c["endofchunk_id"]] = 1
            emb.grad = emb.grad * keep
        torch.nn.utils.clip_grad_norm_([p for _, p in named], c["max_grad_norm"])
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        lines.append(" ".join(repr(x) for x in losses))
    with open(os.path.join(root, "expected_losses.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    torch.save({k: p.detach().clone() for k, p in named}, os.path.join(root, "expected_params.pt"))
    print(f"reference: {len(batches)} iterations, {len(named)} trainable tensors")


def check(root, out):
    expected = torch.load(os.path.join(root, "expected_params.pt"))
    got = torch.load(out)
    if sorted(got) != sorted(expected):
        print("names differ: only in ours", sorted(set(got) - set(expected)),
              "only in Python's", sorted(set(expected) - set(got)))
        return 1
    worst, worst_name = 0.0, ""
    for k, e in expected.items():
        d = (got[k].float() - e.float()).abs().max().item()
        if d > worst:
            worst, worst_name = d, k
    print(f"max |ours - python| = {worst:.3e} ({worst_name})")
    return 0 if worst <= float(os.environ.get("REPLAY_TOLERANCE", "2e-5")) else 1


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        sys.exit(check(sys.argv[2], sys.argv[3]))
