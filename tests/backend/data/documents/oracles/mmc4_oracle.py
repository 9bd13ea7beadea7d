"""Oracle: the MMC4 steps of OpenFlamingo's preprocess_interleaved as of its
main branch (one-to-one assignment by SciPy's linear_sum_assignment, commits
07fb760 / 43dd9f6 / c309447, after the 2.0.1 release), restated up to the text
handed to the tokenizer (no PIL, no tokenizer).

Why a restatement is kept: the pinned open-flamingo wheel (2.0.1, the last
release) assigns each image to its best sentence (argmax) instead, so its own
preprocess_interleaved, which openflamingo_data_oracle_test runs on real
shards, agrees with us only on documents whose images have distinct best
sentences. The one-to-one assignment the spec asks for (with the threshold
on the assigned pair, SciPy's tie-breaking, more images than sentences) on
random competing documents is checked here alone. Everything else this
restates (sizes, threshold, the cut to max images, the text assembly) is
also checked against the package itself there.

Input: [{"doc": json text, "threshold", "max_images", "eos"}]. Output per
case: {"reject": reason} or {"valid", "images", "sentences", "text"}.
"""
import base64
import json
import sys

import numpy as np
from scipy.optimize import linear_sum_assignment

EOC, IMG = "<|endofchunk|>", "<image>"


def plan(doc, threshold, max_images, eos):
    info = json.loads(doc)
    sentences = list(info["text_list"])
    similarity = info["similarity_matrix"]
    valid = []
    for i, entry in enumerate(info["image_info"]):
        if "image_base64" not in entry:
            continue
        if len(base64.b64decode(entry["image_base64"])) // 1000 > 10:
            valid.append(i)
    if not valid:
        return {"reject": "no_valid_images"}
    rows = np.array(similarity)[valid]
    images, chosen = [], []
    for r, c in zip(*linear_sum_assignment(-rows)):
        if rows[r][c] < threshold:
            continue
        images.append(valid[r])
        chosen.append(int(c))
    if not images:
        return {"reject": "below_threshold"}
    images, chosen = images[:max_images], chosen[:max_images]
    for c in chosen:
        sentences[c] = EOC + IMG + sentences[c]
    text = " ".join(sentences).replace(EOC, "", 1)
    text = text.replace(" " + EOC, EOC).replace(IMG + " ", IMG).replace(" " + IMG, IMG)
    return {"valid": valid, "images": images, "sentences": chosen, "text": text + EOC + eos}


cases = json.load(open(sys.argv[1]))
answers = [plan(c["doc"], c["threshold"], c["max_images"], c["eos"]) for c in cases]
json.dump(answers, open(sys.argv[2], "w"))
