"""check_layers.py catches what it is there to catch: each case plants one
violation (an include in a scratch copy of the tree's sources, or a link in a
small link graph) and expects the check to fail naming it; the unplanted
copies pass.

Usage: check_layers_self_test.py SOURCE_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile

source_dir = sys.argv[1]
checker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_layers.py")

# (file to plant in, line, text the failure must contain)
CASES = [
    ("backend/fsdp/planted.cpp", '#include "backend/model/flamingo.h"',
     "backend/fsdp takes only backend/model/unit_hooks.h"),
    ("backend/model/planted.cpp", '#include "backend/fsdp/sharded_model.h"',
     "backend/model may not depend on backend/fsdp"),
    ("backend/protocol/planted.cpp", '#include "backend/data/batch.h"',
     "backend/protocol may not depend on backend/data"),
    ("backend/step/planted.cpp", '#include "backend/trainer/trainer.h"',
     "backend/step may not depend on backend/trainer"),
    ("backend/fsdp_plan/planted.cpp", "#include <torch/torch.h>", "includes LibTorch"),
    ("app/planted.cpp", "#include <torch/torch.h>", "includes LibTorch"),
    ("ui/planted.cpp", '#include "backend/model/flamingo.h"', "the GUI reaches only torch-free backend layers"),
    ("backend/telemetry/planted.cpp", "#include <QString>", "includes Qt"),
    ("backend/trainer/planted.cpp", "namespace fs::engine {\nint planted = 1;\n}",
     "defines code in fs::engine"),
    ("backend/checkpoint/planted.h", "namespace fs::trainer {\nstruct Planted {};\n}",
     "backend/checkpoint holds fs::checkpoint"),
    ("backend/newlayer/planted.cpp", '#include "backend/protocol/status.h"', "no layer in tests/arch"),
]


def run(tree):
    r = subprocess.run([sys.executable, checker, "-", tree], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


failures = []
with tempfile.TemporaryDirectory(prefix="fs-arch-") as scratch:
    tree = os.path.join(scratch, "src")
    for top in ("backend", "app", "ui", "studio"):
        if os.path.isdir(os.path.join(source_dir, top)):
            shutil.copytree(os.path.join(source_dir, top), os.path.join(tree, top),
                            ignore=shutil.ignore_patterns("*.md", "*.txt", "*.py", "*.json", "*.yaml"))
    code, out = run(tree)
    if code != 0:
        failures.append(f"the unplanted tree fails:\n{out}")
    for path, line, expected in CASES:
        planted = os.path.join(tree, path)
        os.makedirs(os.path.dirname(planted), exist_ok=True)
        with open(planted, "w") as f:
            f.write(line + "\n")
        code, out = run(tree)
        os.remove(planted)
        if code == 0 or expected not in out or path not in out:
            failures.append(f"{path} with {line!r}: expected a failure naming {expected!r}, got exit {code}:\n{out}")
        else:
            print(f"caught: {path}: {line}")

# The link graph: a planted link, in a graph of three real target names.
LINK_CASES = [
    ("backend/fsdp\tfs_fsdp\tfs_distributed;fs_model\t\t\n", "fs_fsdp links fs_model (backend/model)"),
    ("backend/model\tfs_model\tfs_distributed\t\t\n", "backend/model may not depend on backend/distributed"),
    ("app\tfs_app\tfs_model\t\t\n", "links LibTorch"),
]
BASE = "backend/distributed\tfs_distributed\tfs_protocol\t\t\nbackend/model\tfs_model\ttorch\t\t\n"
with tempfile.TemporaryDirectory(prefix="fs-arch-") as scratch:
    graph = os.path.join(scratch, "link_graph.tsv")
    os.makedirs(os.path.join(scratch, "src"))
    for row, expected in LINK_CASES:
        with open(graph, "w") as f:
            f.write(BASE + row)
        r = subprocess.run([sys.executable, checker, graph, os.path.join(scratch, "src")],
                           capture_output=True, text=True)
        if r.returncode == 0 or expected not in r.stdout:
            failures.append(f"link {row.strip()!r}: expected a failure naming {expected!r}, got {r.returncode}:\n"
                            f"{r.stdout}{r.stderr}")
        else:
            print(f"caught: link {row.split(chr(9))[1]} -> {row.split(chr(9))[2]}")
    with open(graph, "w") as f:
        f.write(BASE)
    r = subprocess.run([sys.executable, checker, graph, os.path.join(scratch, "src")], capture_output=True, text=True)
    if r.returncode != 0:
        failures.append(f"the unplanted link graph fails:\n{r.stdout}")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print(f"{len(CASES) + len(LINK_CASES)} planted violations caught")
