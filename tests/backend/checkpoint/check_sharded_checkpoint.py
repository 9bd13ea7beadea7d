"""Reads a Flamingo Studio sharded checkpoint directory with real PyTorch
(FS_PYTHON, the project's Python environment): torch.load of every rank file
the index names (bytes of its parameter shards, optimizer entries), and, given
a consolidated file, every parameter reassembled in Python from index.json's
offsets and the shards, compared with that file's model_state_dict. Prints
JSON."""
import json
import os
import sys

import torch

directory = sys.argv[1]
with open(os.path.join(directory, "index.json")) as f:
    index = json.load(f)
ranks = [torch.load(os.path.join(directory, name), map_location="cpu", weights_only=True) for name in index["files"]]
out = {"files": []}
for name, r in zip(index["files"], ranks):
    out["files"].append({
        "file": name,
        "shard": r["shard"],
        "keys": sorted(r.keys()),
        "shard_bytes": sum(t.numel() * t.element_size() for t in r["shards"].values()),
        "optimizer": len(r["optimizer"]),
    })
if len(sys.argv) > 2:
    full = torch.load(sys.argv[2], map_location="cpu", weights_only=True)["model_state_dict"]
    equal, compared = 0, 0
    for unit in index["units"]:
        for flat in unit["flats"]:
            buffer = torch.cat([r["shards"][flat["key"]] for r in ranks])
            for m in flat["members"]:
                if m["name"] not in full:
                    continue
                compared += 1
                value = buffer[m["offset"]:m["offset"] + m["numel"]].view(m["shape"])
                equal += int(torch.equal(value, full[m["name"]]))
    out["compared"] = compared
    out["equal"] = equal
print(json.dumps(out))
