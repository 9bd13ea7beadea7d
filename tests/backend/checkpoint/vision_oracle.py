#!/usr/bin/env python3
"""open_clip's own CLIP as the vision tower's oracle (vision_oracle_test.cpp).

usage: vision_oracle.py ROOT
  For each case directory ROOT/<case>/ holding config.json
  ({"image_size", "patch_size", "width", "layers", "heads", "output_dim",
  "quick_gelu", "images", "seed"}), builds open_clip's CLIP from that config
  (a small text tower beside it, as every CLIP has), moves every weight off its
  init, and writes:
    clip.pt      torch.save of CLIP.state_dict() in OpenAI CLIP's layout
                 (visual.*, the text tower's names, and the three integer
                 entries an OpenAI checkpoint carries: input_resolution,
                 context_length, vocab_size)
    images.pt    torch.save of {"images": (N, 3, H, W)}
    expected.pt  torch.save of {"pooled", "tokens"}: open_clip's
                 VisionTransformer with output_tokens, as OpenFlamingo calls it

Runs with the project's Python environment (open-clip-torch pinned in
scripts/requirements-nodeps.txt); nothing downloads.
"""
import json
import os
import sys

os.environ["HF_HUB_OFFLINE"] = "1"

import torch  # noqa: E402
from open_clip.model import CLIP  # noqa: E402


def make(case_dir):
    with open(os.path.join(case_dir, "config.json")) as f:
        c = json.load(f)
    torch.manual_seed(c["seed"])
    vision_cfg = {
        "image_size": c["image_size"],
        "patch_size": c["patch_size"],
        "width": c["width"],
        "layers": c["layers"],
        "head_width": c["width"] // c["heads"],
        "mlp_ratio": 4.0,
    }
    text_cfg = {"context_length": 16, "vocab_size": 64, "width": 32, "heads": 2, "layers": 1}
    clip = CLIP(c["output_dim"], vision_cfg, text_cfg, quick_gelu=c["quick_gelu"])
    clip.eval()
    with torch.no_grad():
        for p in clip.parameters():  # norms off 1 / 0, every weight off its init
            p.add_(torch.randn_like(p) * 0.05)
    clip.visual.output_tokens = True

    state = dict(clip.state_dict())
    state["input_resolution"] = torch.tensor(c["image_size"])
    state["context_length"] = torch.tensor(text_cfg["context_length"])
    state["vocab_size"] = torch.tensor(text_cfg["vocab_size"])
    torch.save(state, os.path.join(case_dir, "clip.pt"))

    images = torch.randn(c["images"], 3, c["image_size"], c["image_size"])
    torch.save({"images": images}, os.path.join(case_dir, "images.pt"))
    with torch.no_grad():
        pooled, tokens = clip.visual(images)
    torch.save({"pooled": pooled.contiguous(), "tokens": tokens.contiguous()},
               os.path.join(case_dir, "expected.pt"))
    print(f"{os.path.basename(case_dir)}: pooled {tuple(pooled.shape)}, tokens {tuple(tokens.shape)}")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    cases = sorted(d for d in os.listdir(root) if os.path.isfile(os.path.join(root, d, "config.json")))
    if not cases:
        sys.exit(f"{root}: no case directory with a config.json")
    for d in cases:
        make(os.path.join(root, d))


if __name__ == "__main__":
    main()
