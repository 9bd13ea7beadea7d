"""Plants key problems in a checkpoint our engine wrote, for
checkpoint_check_engine_test: saves it as OpenFlamingo's layout (no
"flamingo_studio" record, so the engine resumes it as OpenFlamingo's) with
  - a trainable parameter removed (missing),
  - one frozen parameter added that the checkpoint had left out (loaded),
  - a key no model has (unexpected),
  - a parameter with another shape (mis-shaped),
  - OpenFlamingo's duplicate gated_cross_attn_layers reference (ignored).

Usage: plant_keys.py IN.pt OUT.pt
"""
import sys

import torch

ckpt = torch.load(sys.argv[1])
sd = ckpt["model_state_dict"]
layer0 = "lang_encoder.model.decoder.layers.0."
del sd["perceiver.latents"]
sd[layer0 + "decoder_layer.fc1.bias"] = torch.zeros(64)
sd["lang_encoder.not_a_parameter.weight"] = torch.zeros(3)
sd["perceiver.norm.weight"] = torch.zeros(7)
sd["lang_encoder.gated_cross_attn_layers.0.attn_gate"] = sd[layer0 + "gated_cross_attn_layer.attn_gate"]
del ckpt["flamingo_studio"]
torch.save(ckpt, sys.argv[2])
