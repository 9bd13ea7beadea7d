"""Oracle: the MMC4 steps of OpenFlamingo's preprocess_interleaved, restated
up to the text handed to the tokenizer (no PIL, no tokenizer).

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
