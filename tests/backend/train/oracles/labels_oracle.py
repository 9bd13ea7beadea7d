"""The OpenFlamingo label rules (spec section 4), written from the spec as a
second implementation: LAION and MMC4 labels for given ids.
in: [list of ids (B, L) int64, tensor([pad, image, endofchunk])]
out: list of [laion labels, mmc4 labels], one per ids tensor"""
import sys

import torch

cases, special = torch.load(sys.argv[1])
pad, image, eoc = [int(x) for x in special.tolist()]


def laion_labels(ids):
    labels = ids.clone()
    labels[labels == pad] = -100
    labels[labels == image] = -100
    return labels


def mmc4_labels(ids):
    labels = ids.clone()
    labels[labels == pad] = -100
    for row in labels:
        n = row.shape[0]
        k = 0
        while k < n and row[k] != image:
            row[k] = -100
            k += 1
        for e in torch.where(row == eoc)[0].tolist():
            j = e + 1
            while j < n and row[j] != image:
                row[j] = -100
                j += 1
    labels[labels == image] = -100
    return labels


torch.save([[laion_labels(ids), mmc4_labels(ids)] for ids in cases], sys.argv[2])
