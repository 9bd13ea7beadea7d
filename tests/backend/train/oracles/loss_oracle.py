"""Causal LM loss as the Hugging Face heads compute it: shift, then
cross_entropy(ignore_index=-100) averaged over the targets.
in: list of (logits (B, L, V), labels (B, L)); out: list of 0-dim loss tensors."""
import sys

import torch
import torch.nn.functional as F

cases = torch.load(sys.argv[1])
out = []
for logits, labels in cases:
    shift_logits = logits[..., :-1, :].contiguous().float()
    shift_labels = labels[..., 1:].contiguous()
    out.append(F.cross_entropy(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1), ignore_index=-100))
torch.save(out, sys.argv[2])
