"""Names in the docs that the tree no longer has: fails naming file:line and the stale name.

Reads README.md, docs/*.md and every README.md under the top folders, and checks
- repository paths (backend/..., docs/..., .ci/...; braces, globs, `x.*`, path:line and
  #anchor allowed): each must exist as a file or folder;
- in a folder README, backticked file names (`x.h`, `sub/x.cpp`, `x.py`, `x.sh`): each must
  exist beside that README or from the repository root;
- config fields: backticked dotted names whose first part is a section of the run config
  (from `flamingo-train show-defaults --no-comments`) must be fields of it;
- commands: `flamingo-train WORD` (and the `checkpoint`/`shards`/`export` tools), in code
  spans and code blocks, must be commands of the binary; `flamingo-studio --OPTION` and
  `flamingo-studio remote WORD` likewise when the studio binary is given.
A line carrying `<!-- doc-check: ignore -->` is skipped: for a name meant not to exist.

Usage: check_doc_names.py SOURCE_DIR FLAMINGO_TRAIN [FLAMINGO_STUDIO] [--docs DIR]
  --docs DIR: read the docs from DIR (a copy laid out as the tree), names still from SOURCE_DIR
  (the self-test plants stale names in such a copy).
"""
import glob
import os
import re
import subprocess
import sys

import yaml

TOPS = ("backend", "app", "ui", "studio", "tests", "scripts", "bench", "docs", "fuzz", "packaging",
        "resources", ".ci")
README_TOPS = ("backend", "app", "ui", "studio", "tests", "scripts", "bench", "fuzz", "packaging")
# The escape, in prose as `<!-- doc-check: ignore -->`, in a code block as a `# doc-check: ignore` comment.
IGNORE = "doc-check: ignore"
SKIP_DIRS = {"build", ".git", "node_modules", "__pycache__"}

# A path under one of our top folders, not inside a longer path or URL (../ links allowed).
PATH_RE = re.compile(r"(?<![\w.\-/@~$])(?:\.\./)*((?:%s)/[\w./{},*\-]*)" %
                     "|".join(re.escape(t) for t in TOPS))
CODE_SPAN_RE = re.compile(r"`([^`]+)`")
FILE_NAME_RE = re.compile(r"^(?:[\w][\w./{},*\-]*\.(?:h|cpp|py|sh|\{(?:h|cpp|py|sh)(?:,(?:h|cpp|py|sh))*\})|"
                          r"[\w/{},*\-]+\.\*)$")
# A section (heading to heading) about another schema's dotted names: a JSON file's keys
# (tokenizer.json's `model.type`, the plan record's `model.family`), a state dict's.
OTHER_SCHEMA_RE = re.compile(r"JSON|\w\.json\b|state_dict|Hugging Face")
# Upstream's scripts, named bare in a folder README: OpenFlamingo's `train.py`.
UPSTREAM_RE = re.compile(r"OpenFlamingo|open_flamingo|torchrun")
FIELD_RE = re.compile(r"^([a-z_][a-z0-9_]*(?:(?:\.[a-z_][a-z0-9_]*|\[\d*\]))+)(\.\*)?(?=$|[\s=:,(])")
# Dotted names that are files, not fields: `checkpoint.pt`, `data.json`.
FILE_EXTS = {"pt", "pkl", "pth", "bin", "json", "jsonl", "yaml", "yml", "csv", "tsv", "txt", "md", "h", "cpp",
             "py", "sh", "log", "tar", "gz", "safetensors", "model", "png", "ckpt", "idx", "lock",
             "tmp", "sock", "pid", "db", "cfg", "ini", "html"}
TRAIN_CMD_RE = re.compile(r"(?<![\w\-])flamingo-train((?:\s+[^\s`|;&<>]+){0,3})")
STUDIO_CMD_RE = re.compile(r"(?<![\w\-])flamingo-studio((?:\s+[^\s`|;&<>]+){0,2})")


def run(argv):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    r = subprocess.run(argv, capture_output=True, text=True, env=env)
    return r.stdout + r.stderr


def expand_braces(s):
    m = re.search(r"\{([^{}]*)\}", s)
    if not m:
        return [s]
    out = []
    for alt in m.group(1).split(","):
        out.extend(expand_braces(s[:m.start()] + alt + s[m.end():]))
    return out


def exists(root, rel):
    """Whether rel (braces expanded, globs allowed) names something under root."""
    for p in expand_braces(rel):
        full = os.path.join(root, p)
        if any(c in p for c in "*?["):
            if not glob.glob(full):
                return False
        elif not os.path.exists(full):
            return False
    return True


def is_test_binary(root, p):
    """tests/.../x_test: the test built from x_test.cpp (or run from x_test.py)."""
    return p.startswith("tests/") and any(os.path.isfile(os.path.join(root, p + e)) for e in (".cpp", ".py"))


def file_in_tree(root, folder, name):
    """A folder README's file name: beside it, anywhere in its folder's tree, in the folder's
    tests (tests/FOLDER/...), or from the repository root."""
    if exists(os.path.join(root, folder), name) or exists(root, name):
        return True
    for base in (folder, os.path.join("tests", folder)):
        for dirpath, dirnames, _ in os.walk(os.path.join(root, base)):
            dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
            if exists(dirpath, name):
                return True
    return False


def clean_path(p):
    p = p.split("#", 1)[0]
    p = re.sub(r":\d+(?:-\d+)?$", "", p)
    while p and p[-1] in ".,;:)'\"":
        if p.endswith(".*"):
            break
        p = p[:-1]
    return p


def doc_files(root):
    docs = []
    if os.path.isfile(os.path.join(root, "README.md")):
        docs.append("README.md")
    docs += sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "docs", "*.md")))
    for top in README_TOPS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
            if "README.md" in filenames:
                docs.append(os.path.relpath(os.path.join(dirpath, "README.md"), root))
    return docs


class Config:
    def __init__(self, binary):
        text = run([binary, "show-defaults", "--no-comments"])
        try:
            self.tree = yaml.safe_load(text)
        except yaml.YAMLError as e:
            sys.exit(f"check_doc_names: {binary} show-defaults --no-comments is not YAML: {e}")
        if not isinstance(self.tree, dict):
            sys.exit(f"check_doc_names: {binary} show-defaults --no-comments printed no mapping:\n{text}")
        self.sections = {k for k, v in self.tree.items() if isinstance(v, dict)}

    def has(self, dotted):
        parts = [p for p in re.split(r"\.|(?=\[)", dotted) if p]
        nodes = [self.tree]
        for part in parts:
            nxt = []
            for n in nodes:
                if part.startswith("["):
                    if isinstance(n, list):
                        nxt.extend(n if n else [None])
                    continue
                if isinstance(n, list):  # data.datasets.name: a field of the list's items
                    n_items = n
                else:
                    n_items = [n]
                for item in n_items:
                    if isinstance(item, dict):
                        if not item:  # a free map (launch.env): any key
                            return True
                        if part in item:
                            nxt.append(item[part])
                if isinstance(n, list):  # data.datasets.mmc4: the entry of that name
                    nxt.extend(i for i in n if isinstance(i, dict) and i.get("name") == part)
            if not nxt:
                return False
            nodes = nxt
        return True


class Commands:
    def __init__(self, root, train, studio):
        # A binary built without the engine lacks the engine's commands (train, demo, shards,
        # replay, checkpoint consolidate): those are looked up in the command table's source.
        self.table = ""
        table = os.path.join(root, "backend", "cli", "commands.cpp")
        version = run([train, "version", "--json"])
        if '"engine":false' in version.replace(" ", "") and os.path.isfile(table):
            with open(table) as f:
                self.table = f.read()
        self.binary = train
        self.train = self._words(run([train, "--help"]), r"^commands:$")
        self.tools = {}
        for cmd in sorted(self.train):
            if cmd in ("checkpoint", "shards", "export"):
                self.tools[cmd] = self._tool_words(run([train, cmd, "--help"]))
        self.studio_options = None
        self.remote = None
        if studio:
            self.studio_options = set(re.findall(r"(?<![\w-])(--?[\w][\w-]*)", run([studio, "--help"])))
            self.remote = self._words(run([studio, "remote", "--help"]), r"^commands:$")

    @staticmethod
    def _words(text, header):
        words, on = set(), False
        for line in text.splitlines():
            if re.match(header, line.strip()):
                on = True
                continue
            if on:
                if not line.strip():
                    if words:
                        on = False
                    continue
                if not line.startswith("  ") or line.startswith("     "):
                    continue
                head = re.split(r"\s{2,}", line.strip())[0]
                for w in head.split("|"):
                    w = w.strip().split(" ")[0]
                    if re.match(r"^[a-z][a-z0-9-]*$", w):
                        words.add(w)
        return words

    @staticmethod
    def _tool_words(text):
        return {m.group(1) for m in re.finditer(r"^  ([a-z][a-z0-9-]*)\s{2,}", text, re.M)}

    def known(self, word, where, prefix=()):
        # `help` is a command --help does not list: the binary is asked.
        if word in where or (self.table and f'{{"{word}",' in self.table):
            return True
        r = subprocess.run([self.binary, *prefix, word, "--help"], capture_output=True, text=True)
        return r.returncode == 0


def code_texts(lines):
    """(line number, text) of every code span and code-block line."""
    fence = None
    for i, line in enumerate(lines, 1):
        s = line.strip()
        m = re.match(r"^(```+|~~~+)", s)
        if m:
            fence = None if fence and s.startswith(fence) else (fence or m.group(1))
            continue
        if fence:
            yield i, line
        else:
            for span in CODE_SPAN_RE.findall(line):
                yield i, span


def check_commands(cmds, doc, lines, problems):
    for i, text in code_texts(lines):
        if IGNORE in lines[i - 1]:
            continue
        for m in TRAIN_CMD_RE.finditer(text):
            words = m.group(1).split()
            if not words or words[0].startswith(("-", "$", "<", "[", "{", "\"", "'")) or \
                    not re.match(r"^[a-z][a-z0-9-]*$", words[0]):
                continue
            cmd = words[0]
            if not cmds.known(cmd, cmds.train):
                problems.append(f"{doc}:{i}: `flamingo-train {cmd}`: no such command")
                continue
            if cmd in cmds.tools and len(words) > 1 and re.match(r"^[a-z][a-z0-9-]*$", words[1]):
                if not cmds.known(words[1], cmds.tools[cmd], (cmd,)):
                    problems.append(f"{doc}:{i}: `flamingo-train {cmd} {words[1]}`: no such {cmd} tool")
        if cmds.studio_options is None:
            continue
        for m in STUDIO_CMD_RE.finditer(text):
            words = m.group(1).split()
            if not words:
                continue
            w = words[0]
            if w.startswith("-"):
                opt = w.split("=", 1)[0]
                if re.match(r"^--?[\w][\w-]*$", opt) and opt not in cmds.studio_options:
                    problems.append(f"{doc}:{i}: `flamingo-studio {opt}`: no such option")
            elif w == "remote" and len(words) > 1 and re.match(r"^[a-z][a-z0-9-]*$", words[1]):
                if words[1] not in cmds.remote:
                    problems.append(f"{doc}:{i}: `flamingo-studio remote {words[1]}`: no such command")


def check_doc(root, docs_root, doc, config, cmds, problems):
    with open(os.path.join(docs_root, doc), encoding="utf-8") as f:
        lines = f.read().splitlines()
    folder = os.path.dirname(doc)
    folder_readme = os.path.basename(doc) == "README.md" and folder not in ("", "docs")
    other_schema = set()  # lines of the sections about another schema's names
    start = 0
    for i in range(len(lines) + 1):
        if i == len(lines) or lines[i].startswith("#"):
            if any(OTHER_SCHEMA_RE.search(l) for l in lines[start:i + 1]):
                other_schema.update(range(start + 1, i + 1))
            start = i
    for i, line in enumerate(lines, 1):
        if IGNORE in line:
            continue
        json_line = i in other_schema
        for m in PATH_RE.finditer(line):
            p = clean_path(m.group(1))
            if line[m.end():m.end() + 1] == "<":  # events-<version>.jsonl: the folder is named
                p = os.path.dirname(p)
            if p and not exists(root, p) and not is_test_binary(root, p):
                problems.append(f"{doc}:{i}: {p}: no such file or folder")
        for span in CODE_SPAN_RE.findall(line):
            span = span.strip()
            upstream = span.endswith(".py") and "/" not in span and UPSTREAM_RE.search(line)
            section = span.endswith(".*") and span[:-2] in config.sections  # `launch.*`
            if folder_readme and FILE_NAME_RE.match(span) and not PATH_RE.match(span) and \
                    not upstream and not section:
                name = clean_path(span)
                if not file_in_tree(root, folder, name):
                    problems.append(f"{doc}:{i}: {name}: no such file in {folder}/ or the repository")
            fm = FIELD_RE.match(span)
            if fm and not json_line and fm.group(1).split(".")[0].split("[")[0] in config.sections:
                name = fm.group(1)
                if name.rsplit(".", 1)[-1] in FILE_EXTS:
                    continue
                if not config.has(name):
                    problems.append(f"{doc}:{i}: {name}: no such config field")
    check_commands(cmds, doc, lines, problems)


def main():
    args = sys.argv[1:]
    docs_root = None
    if "--docs" in args:
        k = args.index("--docs")
        if k + 1 >= len(args):
            sys.exit(__doc__)
        docs_root = args[k + 1]
        del args[k:k + 2]
    if len(args) not in (2, 3):
        sys.exit(__doc__)
    root, train = args[0], args[1]
    docs_root = docs_root or root
    studio = args[2] if len(args) == 3 and args[2] else None
    config = Config(train)
    cmds = Commands(root, train, studio)
    if not cmds.train:
        sys.exit(f"check_doc_names: no commands in `{train} --help`")
    code, text = check(root, docs_root, config, cmds)
    print(text)
    return code


def check(root, docs_root, config, cmds):
    """(exit code, report) for the docs under docs_root, names resolved in root."""
    problems = []
    docs = doc_files(docs_root)
    for doc in docs:
        check_doc(root, docs_root, doc, config, cmds, problems)
    if problems:
        return 1, f"{len(problems)} stale name(s) in the docs:\n" + "\n".join(problems)
    return 0, f"{len(docs)} docs: every path, file name, config field and command named exists"

if __name__ == "__main__":
    sys.exit(main())
