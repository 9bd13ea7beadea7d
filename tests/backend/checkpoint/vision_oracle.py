#!/usr/bin/env python3
"""open_clip's own vision tower as ours' oracle (vision_oracle_test.cpp).

usage: vision_oracle.py ROOT
  For each case directory ROOT/<case>/ holding config.json
  ({"kind", "image_size", "patch_size", "width", "layers", "heads",
  "output_dim", "quick_gelu", "images", "seed"}), builds open_clip's model
  from that config, moves every weight off its init, and writes:
    weights.pt   the state dict model.vision.pretrained names, by kind:
                 "clip"   open_clip's CLIP (a small text tower beside the
                          visual one) in OpenAI CLIP's layout: visual.*, the
                          text tower's names, and the three integer entries an
                          OpenAI checkpoint carries (input_resolution,
                          context_length, vocab_size); also open_clip.pt,
                          CLIP.state_dict() as open_clip saves it
                 "tower"  open_clip.transformer.VisionTransformer alone, built
                          as OpenFlamingo's tower is (output_tokens=True):
                          bare names, as `vision_encoder = clip.visual` holds
                 "openai" OpenAI's released layout, as open_clip's
                          build_model_from_openai_state_dict reads it (strict
                          load; the shape is inferred from the tensors, heads =
                          width / 64): its model's state dict, fp16 where
                          OpenAI's release is (convert_weights_to_fp16), with
                          the three integer entries
    images.pt    torch.save of {"images": (N, 3, H, W)}
    expected.pt  torch.save of {"pooled", "tokens", "tokens_ln_post"}: open_clip
                 2.20's VisionTransformer with output_tokens, as OpenFlamingo
                 calls it (tokens without ln_post), and its ln_post applied to
                 those tokens (what open_clip >= 2.23 returns)

Runs with the project's Python environment (open-clip-torch pinned in
scripts/requirements-nodeps.txt); nothing downloads.
"""
import json
import os
import sys

os.environ["HF_HUB_OFFLINE"] = "1"

import torch  # noqa: E402
from open_clip.model import CLIP, build_model_from_openai_state_dict  # noqa: E402
from open_clip.transformer import QuickGELU, VisionTransformer  # noqa: E402

OPENAI_INTS = ("input_resolution", "context_length", "vocab_size")


def perturb(module):
    with torch.no_grad():
        for p in module.parameters():  # norms off 1 / 0, every weight off its init
            p.add_(torch.randn_like(p) * 0.05)


def clip_model(c, text_width):
    vision_cfg = {
        "image_size": c["image_size"],
        "patch_size": c["patch_size"],
        "width": c["width"],
        "layers": c["layers"],
        "head_width": c["width"] // c["heads"],
        "mlp_ratio": 4.0,
    }
    text_cfg = {"context_length": 16, "vocab_size": 64, "width": text_width, "heads": max(1, text_width // 64),
                "layers": 1}
    clip = CLIP(c["output_dim"], vision_cfg, text_cfg, quick_gelu=c["quick_gelu"])
    perturb(clip)
    return clip.eval()


def with_openai_ints(state, c):
    state = dict(state)
    state["input_resolution"] = torch.tensor(c["image_size"])
    state["context_length"] = torch.tensor(16)
    state["vocab_size"] = torch.tensor(64)
    return state


def make(case_dir):
    with open(os.path.join(case_dir, "config.json")) as f:
        c = json.load(f)
    torch.manual_seed(c["seed"])
    kind = c["kind"]
    if kind == "clip":
        clip = clip_model(c, 32)
        torch.save(clip.state_dict(), os.path.join(case_dir, "open_clip.pt"))
        torch.save(with_openai_ints(clip.state_dict(), c), os.path.join(case_dir, "weights.pt"))
        visual = clip.visual
    elif kind == "tower":
        visual = VisionTransformer(c["image_size"], c["patch_size"], c["width"], c["layers"], c["heads"], 4.0,
                                   output_dim=c["output_dim"],
                                   act_layer=QuickGELU if c["quick_gelu"] else torch.nn.GELU, output_tokens=True)
        perturb(visual)
        visual.eval()
        torch.save(visual.state_dict(), os.path.join(case_dir, "weights.pt"))
    elif kind == "openai":
        assert c["quick_gelu"] and c["width"] == 64 * c["heads"], "OpenAI's layout: QuickGELU, 64-wide heads"
        source = with_openai_ints(clip_model(c, 64).state_dict(), c)
        model = build_model_from_openai_state_dict(dict(source), quick_gelu=True)
        released = with_openai_ints(model.state_dict(), c)
        dtypes = {str(t.dtype) for k, t in released.items() if k.startswith("visual.")}
        assert dtypes == {"torch.float16", "torch.float32"}, dtypes
        assert released["visual.conv1.weight"].dtype == torch.float16
        build_model_from_openai_state_dict(dict(released), quick_gelu=True)  # its own reader takes it back
        torch.save(released, os.path.join(case_dir, "weights.pt"))
        visual = model.float().visual
    else:
        sys.exit(f"{case_dir}: unknown kind {kind!r}")
    visual.output_tokens = True

    images = torch.randn(c["images"], 3, c["image_size"], c["image_size"])
    torch.save({"images": images}, os.path.join(case_dir, "images.pt"))
    with torch.no_grad():
        pooled, tokens = visual(images)
        tokens_ln_post = visual.ln_post(tokens)
    torch.save({"pooled": pooled.contiguous(), "tokens": tokens.contiguous(),
                "tokens_ln_post": tokens_ln_post.contiguous()}, os.path.join(case_dir, "expected.pt"))
    print(f"{os.path.basename(case_dir)} ({kind}): pooled {tuple(pooled.shape)}, tokens {tuple(tokens.shape)}")


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
