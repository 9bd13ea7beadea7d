"""docs/architecture.md's layer table matches the CMake tree: every target
that fs_add_library / fs_add_executable defines under backend/, app/, ui/ and
studio/ has a row for its folder naming it, every row names a target that
exists, and a row's "links" cell names the folder of every library of ours
the target links (PUBLIC_DEPS, PRIVATE_DEPS, DEPS). Backend folders are named
without "backend/" (`state_keys`, `data/image`), the GUI's with their path
(`app/monitor`, `ui/plots`, `app`). Read from the sources, so it holds
whatever the build options leave out.

Usage: check_architecture_doc.py SOURCE_DIR [--self-test]
  --self-test: plants a missing row and a missing link in the real inputs and
  expects each to be named; the unplanted inputs must pass.
Exits 1 naming every mismatch.
"""
import os
import re
import sys

TOPS = ("backend", "app", "ui", "studio")
KEYWORDS = {"SOURCES", "PUBLIC_DEPS", "PRIVATE_DEPS", "DEPS", "OUTPUT_NAME", "TORCH", "UNITY"}


def call_body(text, start):
    """The text between the parentheses of the call whose '(' is at start."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[start + 1:i]
    return text[start + 1:]


def read_targets(source_dir):
    """[(folder, target, output name or None, [fs_ deps])] from every CMakeLists.txt under TOPS."""
    targets = []
    for top in TOPS:
        for root, dirs, files in os.walk(os.path.join(source_dir, top)):
            dirs.sort()
            if "CMakeLists.txt" not in files:
                continue
            with open(os.path.join(root, "CMakeLists.txt"), encoding="utf-8") as f:
                text = re.sub(r"#[^\n]*", "", f.read())
            folder = os.path.relpath(root, source_dir).replace(os.sep, "/")
            for m in re.finditer(r"\bfs_add_(?:library|executable)\s*\(", text):
                words = call_body(text, m.end() - 1).split()
                deps, output, section = [], None, None
                for w in words[1:]:
                    if w in KEYWORDS:
                        section = w
                    elif section == "OUTPUT_NAME":
                        output, section = w, None
                    elif section in ("PUBLIC_DEPS", "PRIVATE_DEPS", "DEPS") and re.fullmatch(r"fs_\w+", w):
                        deps.append(w)
                targets.append((folder, words[0], output, deps))
    return targets


def short_name(folder):
    return folder[len("backend/"):] if folder.startswith("backend/") else folder


def read_rows(doc_text):
    """{folder: (targets cell, links cell)} of the table under '## Layers'."""
    section = doc_text.split("\n## Layers", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = (cells[1], cells[2])
    return rows


def check(doc_text, targets):
    errors = []
    rows = read_rows(doc_text)
    folder_of = {t: folder for folder, t, _, _ in targets}
    for folder, target, output, deps in targets:
        if folder not in rows:
            errors.append(f"{target} ({folder}): no row for {folder} in the layer table")
            continue
        named, links = rows[folder]
        if f"`{target}`" not in named and not (output and f"`{output}`" in named):
            errors.append(f"{target} ({folder}): the row for {folder} does not name it")
        tokens = set(re.findall(r"[A-Za-z0-9_/]+", links))
        for dep in deps:
            if dep not in folder_of or folder_of[dep] == folder:
                continue
            if short_name(folder_of[dep]) not in tokens:
                errors.append(f"{target} ({folder}) links {dep}, but the row's links cell does not name "
                              f"{short_name(folder_of[dep])}: '{links}'")
    folders = {folder for folder, _, _, _ in targets}
    for folder in rows:
        if folder not in folders:
            errors.append(f"the layer table has a row for {folder}, which defines no target")
    return errors


def self_test(doc_text, targets):
    failures = []
    if check(doc_text, targets):
        failures.append("the unplanted inputs do not pass")
    without_row = "\n".join(l for l in doc_text.splitlines() if not l.startswith("| `backend/inspect` |"))
    if not any("fs_inspect" in e and "no row" in e for e in check(without_row, targets)):
        failures.append("a missing row for backend/inspect was not named")
    planted = [(f, t, o, d + ["fs_export"]) if t == "fs_model" else (f, t, o, d) for f, t, o, d in targets]
    if not any("fs_model" in e and "export" in e for e in check(doc_text, planted)):
        failures.append("a link of fs_model to fs_export missing from its row was not named")
    extra = doc_text.replace("| `backend/protocol` |", "| `backend/gone` | `fs_gone` | protocol | x |\n"
                             "| `backend/protocol` |", 1)
    if not any("backend/gone" in e for e in check(extra, targets)):
        failures.append("a row for a folder without targets was not named")
    return failures


def main():
    source_dir = sys.argv[1]
    with open(os.path.join(source_dir, "docs", "architecture.md"), encoding="utf-8") as f:
        doc_text = f.read()
    targets = read_targets(source_dir)
    if len(targets) < 30:
        print(f"check_architecture_doc: found only {len(targets)} targets under {source_dir}")
        return 1
    problems = self_test(doc_text, targets) if "--self-test" in sys.argv[2:] else check(doc_text, targets)
    for p in problems:
        print(p)
    if not problems:
        print(f"docs/architecture.md: {len(targets)} targets, every one in its row")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
