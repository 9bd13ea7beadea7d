"""The layer rules, checked on the CMake link graph, the built executables and
the sources.

GUI and backend: app/, ui/ and studio/ never reach LibTorch; backend/ never
reaches Qt; the torch-free backend folders never reach LibTorch.

Backend layers (BACKEND_LAYERS below): a folder may link and include only
the folders listed for it, so the arrows point one way:
  protocol <- {runtime, tensorfile, launch, telemetry, state_keys, model, data, fsdp_plan},
  {tensorfile, state_keys} <- inspect <- checkpoint, state_keys <- model
           <- {step, distributed} <- fsdp <- checkpoint <- trainer <- cli,
  protocol <- export <- {cli, the GUI}
and backend/fsdp/ takes nothing from backend/model/ but the published hook
interface, backend/model/unit_hooks.h (and takes backend/runtime's device
streams directly).

Namespaces follow folders: a file in backend/X/ defines its code in
fs::X (or a namespace inside it); backend/data/<sub>/ is fs::data, and
backend/export/ is fs::exporter (`export` is a keyword). Another folder's
namespace may be opened only to forward-declare its types.

Usage: check_layers.py LINK_GRAPH_TSV SOURCE_DIR   (LINK_GRAPH_TSV may be '-'
to check the sources only). Exits 1 naming every violation.
"""
import os
import re
import subprocess
import sys

# Folder -> the other backend folders it may depend on (link or #include).
# backend/data/<sub>/ folders are one layer with backend/data.
_DATA = {"backend/data", "backend/data/tokenizer", "backend/data/shards", "backend/data/image",
         "backend/data/documents", "backend/data/shardgen"}
BACKEND_LAYERS = {
    "backend/protocol": set(),
    "backend/runtime": {"backend/protocol"},
    "backend/tensorfile": {"backend/protocol"},
    "backend/state_keys": {"backend/protocol"},
    "backend/inspect": {"backend/protocol", "backend/tensorfile", "backend/state_keys"},
    "backend/launch": {"backend/protocol"},
    "backend/telemetry": {"backend/protocol"},
    "backend/model": {"backend/protocol", "backend/runtime", "backend/state_keys"},
    "backend/fsdp_plan": {"backend/protocol", "backend/tensorfile"},
    "backend/step": {"backend/protocol", "backend/runtime"} | _DATA,
    "backend/distributed": {"backend/protocol", "backend/telemetry"},
    "backend/fsdp": {"backend/protocol", "backend/runtime", "backend/distributed", "backend/step", "backend/telemetry",
                     "backend/tensorfile", "backend/fsdp_plan"},
    "backend/checkpoint": {"backend/protocol", "backend/runtime", "backend/tensorfile", "backend/telemetry",
                           "backend/model", "backend/step", "backend/distributed", "backend/fsdp",
                           "backend/fsdp_plan", "backend/inspect", "backend/state_keys"} | _DATA,
}
for _d in _DATA:
    BACKEND_LAYERS[_d] = {"backend/protocol", "backend/runtime"} | _DATA
BACKEND_LAYERS["backend/trainer"] = set(BACKEND_LAYERS) - {"backend/trainer"} | {"backend/checkpoint"}
# Export of a run's telemetry (TensorBoard, CSV): reads the wire only; the CLI and the GUI use it.
BACKEND_LAYERS["backend/export"] = {"backend/protocol"}
BACKEND_LAYERS["backend/cli"] = set(BACKEND_LAYERS) - {"backend/cli"}
# backend/fsdp/ may include exactly these from backend/model/ (NOTE: model code is single-device;
# FSDP is applied from outside, by backend/trainer/parallelize.h).
FSDP_MODEL_HEADERS = {"backend/model/unit_hooks.h"}

TORCH_FREE = {"app", "ui", "studio", "backend/protocol", "backend/tensorfile", "backend/inspect", "backend/launch",
              "backend/fsdp_plan", "backend/state_keys", "backend/export"} | (_DATA - {"backend/data"})
TORCH = re.compile(r"(^|/|lib)(torch|c10|caffe2|gloo)", re.I)
QT = re.compile(r"Qt[56]|QCustomPlot", re.I)
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]')
INCLUDE_TORCH = re.compile(r"^(torch|ATen|c10)/")
INCLUDE_QT = re.compile(r"^(Q[A-Z]\w*|qcustomplot)")


def backend_folder(path):
    """The layer folder of a repository-relative path under backend/, or None."""
    parts = path.split("/")
    if len(parts) < 3 or parts[0] != "backend":
        return None
    if parts[1] == "data" and len(parts) > 3 and f"backend/data/{parts[2]}" in _DATA:
        return f"backend/data/{parts[2]}"
    return f"backend/{parts[1]}"


def torch_free(path):
    """Whether a repository-relative path or link-graph folder lies in a torch-free layer."""
    return path.split("/")[0] in ("app", "ui", "studio") or backend_folder(path + "/x") in TORCH_FREE


# Folders whose namespace is not fs::<folder name> (NOTE in the module docstring).
NAMESPACE_OF = {d: "data" for d in _DATA} | {"backend/export": "exporter"}
NAMESPACE_OPEN = re.compile(r"^namespace fs::([A-Za-z_][\w:]*) \{")
FORWARD_DECL = re.compile(r"^\s*((class|struct|enum class|enum) \w+( : [\w:]+)?;)?\s*(//.*)?$")


def check_namespaces(rel, lines):
    """Errors for a backend file whose code lies outside its folder's namespace."""
    here = backend_folder(rel)
    if here is None:
        return []
    own = NAMESPACE_OF.get(here, here.split("/", 1)[1])
    errors, opened = [], None
    for n, line in enumerate(lines, 1):
        m = NAMESPACE_OPEN.match(line)
        if m:
            top = m.group(1).split("::")[0]
            opened = None if top == own else (m.group(1), n)
            continue
        if line.startswith("}"):
            opened = None
        elif opened and not FORWARD_DECL.match(line):
            errors.append(f"{rel}:{n} defines code in fs::{opened[0]} (opened at line {opened[1]}): "
                          f"{here} holds fs::{own}; another folder's namespace may only forward-declare")
            opened = None
    return errors


def check_sources(source_dir):
    errors, unknown = [], {}  # unknown: folder -> its first file
    for top in ("backend", "app", "ui", "studio"):
        for root, _, files in os.walk(os.path.join(source_dir, top)):
            for name in sorted(files):
                if not name.endswith((".h", ".cpp")):
                    continue
                path = os.path.join(root, name)
                rel = os.path.relpath(path, source_dir)
                here = backend_folder(rel)
                lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
                errors += check_namespaces(rel, lines)
                for n, line in enumerate(lines, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    inc = m.group(1)
                    where = f"{rel}:{n}"
                    if INCLUDE_TORCH.match(inc) and torch_free(rel):
                        errors.append(f"{where} includes LibTorch ({inc}) in a torch-free folder")
                    if INCLUDE_QT.match(inc) and top == "backend":
                        errors.append(f"{where} includes Qt ({inc}) in the backend")
                    if top != "backend" and inc.startswith("backend/") and backend_folder(inc) not in (
                            "backend/protocol", "backend/fsdp_plan", "backend/tensorfile", "backend/inspect",
                            "backend/launch", "backend/export"):
                        errors.append(f"{where} includes {inc}: the GUI reaches only torch-free backend layers")
                    there = backend_folder(inc)
                    if here is None or there is None or there == here:
                        continue
                    allowed = BACKEND_LAYERS.get(here)
                    if allowed is None:
                        unknown.setdefault(here, rel)
                    elif here == "backend/fsdp" and there == "backend/model":
                        if inc not in FSDP_MODEL_HEADERS:  # header-only: no link to fs_model either
                            errors.append(f"{where} includes {inc}: backend/fsdp takes only "
                                          f"{', '.join(sorted(FSDP_MODEL_HEADERS))} from backend/model")
                    elif there not in allowed:
                        errors.append(f"{where} includes {inc}: {here} may not depend on {there}")
    errors += [f"{f} ({unknown[f]}, ...): a backend folder with no layer in tests/arch/check_layers.py"
               for f in sorted(unknown)]
    return errors


def check_link_graph(graph_file):
    rows = [l.rstrip("\n").split("\t") for l in open(graph_file) if l.strip()]
    folder = {r[1]: r[0] for r in rows}
    deps = {r[1]: sorted({re.sub(r"^\$<LINK_ONLY:(.*)>$", r"\1", d) for d in (r[2] + ";" + r[3]).split(";") if d})
            for r in rows}
    exe = {r[1]: r[4] for r in rows if len(r) > 4 and r[4]}

    def closure(target, seen=None):
        seen = set() if seen is None else seen
        for d in deps.get(target, []):
            if d not in seen:
                seen.add(d)
                closure(d, seen)
        return seen

    errors = []
    for target, f in sorted(folder.items()):
        reach = closure(target)
        if torch_free(f):
            bad = sorted(d for d in reach if TORCH.search(d))
            if bad:
                errors.append(f"{f}: target {target} links LibTorch via {bad}")
        if f.startswith("backend"):
            bad = sorted(d for d in reach if QT.search(d))
            if bad:
                errors.append(f"{f}: target {target} links Qt via {bad}")
            allowed = BACKEND_LAYERS.get(f)
            if allowed is None:
                errors.append(f"{f}: target {target} is in a folder with no layer in tests/arch/check_layers.py")
                continue
            for d in deps[target]:
                there = folder.get(d)
                if there and there.startswith("backend") and there != f and there not in allowed:
                    errors.append(f"{f}: target {target} links {d} ({there}): {f} may not depend on {there}")

    for target, path in sorted(exe.items()):
        if not os.path.exists(path):
            continue  # not built in this configuration
        needed = subprocess.run(["readelf", "-d", path], capture_output=True, text=True).stdout
        libs = re.findall(r"\[(.*?)\]", needed)
        if folder[target].startswith(("app", "ui", "studio")) and any(re.match(r"lib(torch|c10)", l) for l in libs):
            errors.append(f"{path} needs LibTorch: {libs}")
        if folder[target].startswith("backend") and any(l.startswith("libQt") for l in libs):
            errors.append(f"{path} needs Qt: {libs}")
    print(f"checked {len(folder)} targets, {len(exe)} executables")
    return errors


def main(argv):
    graph_file, source_dir = argv[1], argv[2]
    errors = [] if graph_file == "-" else check_link_graph(graph_file)
    errors += check_sources(source_dir)
    if errors:
        print("\n".join(errors))
        return 1
    print("layer rules hold")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
