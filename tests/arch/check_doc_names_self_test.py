"""check_doc_names.py catches what it is there to catch: each case plants one stale name (a
file path, a folder, a config field, a command, a file name in a folder README, ...) into a
scratch copy of the docs and expects the check to fail naming it; the unplanted copy passes,
and so does a planted name on a line that carries the escape. Prints what it caught.

Usage: check_doc_names_self_test.py SOURCE_DIR FLAMINGO_TRAIN [FLAMINGO_STUDIO]
"""
import os
import shutil
import sys
import tempfile

source_dir, train = sys.argv[1], sys.argv[2]
studio = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else ""
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from check_doc_names import Commands, Config, check, doc_files  # noqa: E402

# The binaries are asked once; each case runs the check on the copy.
config = Config(train)
cmds = Commands(source_dir, train, studio or None)

# (doc to plant in, the line appended, text the failure must contain)
CASES = [
    ("docs/cli.md", "The parser is `backend/cli/planted_parser.cpp`.",
     "docs/cli.md:{n}: backend/cli/planted_parser.cpp: no such file or folder"),
    ("README.md", "The step rules live in backend/train/ (see there).",
     "README.md:{n}: backend/train/: no such file or folder"),
    ("docs/distributed.md", "Set `parallel.use_orig_param: true` for FSDP.",
     "docs/distributed.md:{n}: parallel.use_orig_param: no such config field"),
    ("docs/cli.md", "Run `flamingo-train trian --config run.yaml`.",
     "docs/cli.md:{n}: `flamingo-train trian`: no such command"),
    ("docs/checkpoints.md", "```\nflamingo-train checkpoint inspekt ckpt.pt\n```",
     "docs/checkpoints.md:{n1}: `flamingo-train checkpoint inspekt`: no such checkpoint tool"),
    ("backend/fsdp/README.md", "| `planted_shards.h` | a file that is not there |",
     "backend/fsdp/README.md:{n}: planted_shards.h: no such file in backend/fsdp/ or the repository"),
]
if studio:
    CASES += [
        ("docs/cluster.md", "Follow it with `flamingo-studio --folow DIR`.",
         "docs/cluster.md:{n}: `flamingo-studio --folow`: no such option"),
        ("docs/cluster.md", "Or `flamingo-studio remote lst HOST`.",
         "docs/cluster.md:{n}: `flamingo-studio remote lst`: no such command"),
    ]
# Planted names that exist, or are not ours, or carry the escape: each passes.
PASSING = [
    ("docs/cli.md", "OpenFlamingo's old `backend/train/step.py`. <!-- doc-check: ignore -->"),
    ("docs/cli.md", "See backend/fsdp/flat_param.{h,cpp}, `backend/cli/commands.*`, "
                    "backend/cli/commands.cpp:12, [usage](docs/cli.md#usage), tests/backend/*/CMakeLists.txt."),
    ("docs/cli.md", "`checkpoint.pt`, `data.pkl`, `data.datasets[0].batch_size`, `data.datasets.mmc4.shards`, "
                    "`launch.env.NCCL_DEBUG`, `parallel.mixed_precision.param_dtype`, `launch.slurm.*`."),
    ("docs/cli.md", "`flamingo-train help validate`, `flamingo-train checkpoint state --help`."),
    ("docs/cli.md", "OpenFlamingo's `open_flamingo/train/train.py`."),
    ("backend/fsdp/README.md", "`flat_param.h`, `backend/model/unit_hooks.h`, OpenFlamingo's `train.py`."),
]


def run(docs):
    return check(source_dir, docs, config, cmds)


def plant(docs, path, text):
    """Appends text to docs/path; returns the number of its first line."""
    full = os.path.join(docs, path)
    with open(full) as f:
        n = len(f.read().splitlines()) + 2
    with open(full, "a") as f:
        f.write("\n" + text + "\n")
    return n


failures = []
with tempfile.TemporaryDirectory(prefix="fs-doc-names-") as scratch:
    docs = os.path.join(scratch, "docs-copy")
    for doc in doc_files(source_dir):
        os.makedirs(os.path.dirname(os.path.join(docs, doc)), exist_ok=True)
        shutil.copyfile(os.path.join(source_dir, doc), os.path.join(docs, doc))
    code, out = run(docs)
    if code != 0:
        failures.append(f"the unplanted copy fails:\n{out}")
    for path, text, expected in CASES + [p + (None,) for p in PASSING]:
        original = open(os.path.join(docs, path)).read()
        n = plant(docs, path, text)
        code, out = run(docs)
        with open(os.path.join(docs, path), "w") as f:
            f.write(original)
        if expected is None:
            if code != 0:
                failures.append(f"{path}: {text!r} is reported:\n{out}")
            else:
                print(f"passes: {path}: {text}")
            continue
        want = expected.format(n=n, n1=n + 1)
        if code == 0 or want not in out or not out.startswith("1 stale name(s)"):
            failures.append(f"{path}: planting {text!r}: expected a failure naming {want!r}, got "
                            f"exit {code}:\n{out}")
        else:
            print(f"caught: {want}")

if failures:
    print("\n\n".join(failures))
    sys.exit(1)
print(f"check_doc_names.py caught all {len(CASES)} planted stale names; the unplanted docs pass")
