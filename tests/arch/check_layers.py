"""Fails when a GUI layer reaches LibTorch or a backend layer reaches Qt, or
when a torch-free library (backend/data/<sub>/, backend/launch/, backend/fsdp_plan/) reaches LibTorch.

Reads the link graph CMake wrote (folder, target, link libs, interface link
libs, executable path), closes it transitively over our own targets, and
checks the built executables' NEEDED entries with readelf. Also scans
sources: no torch include under app/ or ui/, no Qt include under backend/.
"""
import os
import re
import subprocess
import sys

graph_file, source_dir = sys.argv[1], sys.argv[2]
rows = [l.rstrip("\n").split("\t") for l in open(graph_file) if l.strip()]
folder = {r[1]: r[0] for r in rows}
deps = {r[1]: [d for d in (r[2] + ";" + r[3]).split(";") if d] for r in rows}
exe = {r[1]: r[4] for r in rows if len(r) > 4 and r[4]}

def closure(target, seen=None):
    seen = set() if seen is None else seen
    for d in deps.get(target, []):
        d = re.sub(r"^\$<LINK_ONLY:(.*)>$", r"\1", d)
        if d not in seen:
            seen.add(d)
            closure(d, seen)
    return seen

TORCH = re.compile(r"(^|/|lib)(torch|c10|caffe2|gloo)", re.I)
QT = re.compile(r"Qt[56]|QCustomPlot", re.I)
errors = []
for target, f in folder.items():
    reach = closure(target)
    if f.startswith(("app", "ui", "backend/data/", "backend/launch", "backend/fsdp_plan")):
        bad = sorted(d for d in reach if TORCH.search(d))
        if bad:
            errors.append(f"{f}: target {target} links LibTorch via {bad}")
    if f.startswith("backend"):
        bad = sorted(d for d in reach if QT.search(d))
        if bad:
            errors.append(f"{f}: target {target} links Qt via {bad}")

for target, path in exe.items():
    if not os.path.exists(path):
        continue  # not built in this configuration
    needed = subprocess.run(["readelf", "-d", path], capture_output=True, text=True).stdout
    libs = re.findall(r"\[(.*?)\]", needed)
    if folder[target].startswith(("app", "ui")) and any(re.match(r"lib(torch|c10)", l) for l in libs):
        errors.append(f"{path} needs LibTorch: {libs}")
    if folder[target].startswith("backend") and any(l.startswith("libQt") for l in libs):
        errors.append(f"{path} needs Qt: {libs}")

include_torch = re.compile(r'#\s*include\s*[<"](torch|ATen|c10)/')
include_qt = re.compile(r'#\s*include\s*[<"](Q[A-Z]\w*|qcustomplot)')
TORCH_FREE_DATA = [os.path.join("backend", "data", d) for d in ("tokenizer", "shards", "image", "documents", "shardgen")]
TORCH_FREE_DATA.append(os.path.join("backend", "launch"))
TORCH_FREE_DATA.append(os.path.join("backend", "fsdp_plan"))
for top, pattern, what in [("app", include_torch, "LibTorch"), ("ui", include_torch, "LibTorch"),
                           ("backend", include_qt, "Qt")] + [(d, include_torch, "LibTorch") for d in TORCH_FREE_DATA]:
    for root, _, files in os.walk(os.path.join(source_dir, top)):
        for name in files:
            if name.endswith((".h", ".cpp")):
                path = os.path.join(root, name)
                for n, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
                    if pattern.search(line):
                        errors.append(f"{os.path.relpath(path, source_dir)}:{n} includes {what}")

print(f"checked {len(folder)} targets, {len(exe)} executables")
if errors:
    print("\n".join(errors))
    sys.exit(1)
