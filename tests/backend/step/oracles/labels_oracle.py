"""OpenFlamingo's own label rules: its train_one_epoch (open_flamingo 2.0.1's
train/train_utils.py, from the pinned package) runs one step per case, LAION
and MMC4, on a model that records the labels it is handed.
in: [list of ids (B, L) int64, tensor([pad, image, endofchunk])]
out: list of [laion labels, mmc4 labels], one per ids tensor

What stands in around train_one_epoch, and why it changes nothing it decides:
- the model records `labels` and returns a zero loss with a gradient, so the
  backward, clip and optimizer step run;
- the tokenizer answers the two lookups train_one_epoch makes ("<image>",
  "<|endofchunk|>" as the last id) and carries pad_token_id and eos_token
  ("</s>": train_one_epoch compares ids with this string, which masks nothing);
- wandb is an empty module: train_utils imports it, and report_to_wandb is off.
"""
import os
import sys
import types

os.environ["HF_HUB_OFFLINE"] = "1"
sys.modules.setdefault("wandb", types.ModuleType("wandb"))

import torch  # noqa: E402
from open_flamingo.train.train_utils import train_one_epoch  # noqa: E402


class RecordingModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(1))
        self.labels = []

    def forward(self, vision_x, lang_x, attention_mask, labels):
        self.labels.append(labels.clone())
        return ((self.w * 0.0).sum(),)


class SpecialTokens:
    def __init__(self, pad, image, eoc):
        self.pad_token_id = pad
        self.eos_token = "</s>"
        self.ids = {"<image>": image, "<|endofchunk|>": eoc}

    def __call__(self, text, add_special_tokens=True):
        return {"input_ids": [self.ids[text]]}


class OneBatch:
    num_batches = 1

    def __init__(self, batch):
        self.batch = batch

    def __iter__(self):
        yield self.batch


def labels_for(ids, tokenizer):
    b = ids.size(0)
    mask = torch.ones_like(ids)
    laion = (torch.zeros(b, 3, 2, 2), (ids, mask))
    mmc4 = (torch.zeros(b, 1, 3, 2, 2), [(ids[i:i + 1], mask[i:i + 1]) for i in range(b)])
    model = RecordingModel()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    args = types.SimpleNamespace(
        precision="fp32", fsdp=False, rank=0, world_size=1, num_epochs=1, gradient_accumulation_steps=1,
        loss_multiplier_laion=1.0, loss_multiplier_mmc4=1.0, freeze_lm_embeddings=True,
        report_to_wandb=False, logging_steps=1 << 30, batch_size_laion=b, batch_size_mmc4=b)
    train_one_epoch(args, model, 0, OneBatch(laion), OneBatch(mmc4), tokenizer, optimizer, scheduler,
                    "cpu", sys.modules["wandb"])
    assert len(model.labels) == 2, f"train_one_epoch made {len(model.labels)} forward calls, not 2"
    return model.labels


def main():
    cases, special = torch.load(sys.argv[1])
    pad, image, eoc = [int(x) for x in special.tolist()]
    tokenizer = SpecialTokens(pad, image, eoc)
    torch.save([labels_for(ids, tokenizer) for ids in cases], sys.argv[2])


if __name__ == "__main__":
    main()
