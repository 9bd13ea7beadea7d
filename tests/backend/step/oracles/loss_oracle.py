"""Causal LM loss as transformers computes it for every *ForCausalLM head:
transformers.loss.loss_utils.ForCausalLMLoss (the pinned transformers), mean
over the targets with ignore_index -100.
in: list of (logits (B, L, V), labels (B, L)); out: list of 0-dim loss tensors."""
import os
import sys

os.environ["HF_HUB_OFFLINE"] = "1"

import torch  # noqa: E402
from transformers.loss.loss_utils import ForCausalLMLoss  # noqa: E402

cases = torch.load(sys.argv[1])
out = []
for logits, labels in cases:
    out.append(ForCausalLMLoss(logits, labels, vocab_size=logits.size(-1)))
torch.save(out, sys.argv[2])
