#!/usr/bin/env python3
"""Compiles the engine's CUDA-only code paths (#ifdef FS_WITH_CUDA) in a build
without them (FS_WITH_CUDA off: a CPU-only LibTorch, or -DFS_WITH_CUDA=OFF):
every backend source that mentions FS_WITH_CUDA, with its own target's flags
from compile_commands.json, FS_WITH_CUDA and USE_C10D_NCCL defined, and
-fsyntax-only against the CUDA toolkit's headers and LibTorch's own CUDA
headers (c10/cuda, ATen/cuda, ProcessGroupNCCL.hpp). Nothing is linked or
run: it proves the code compiles against this LibTorch's CUDA API, which a CPU
build never would. Written for Debian's CPU-only LibTorch 1.13; the default
build against PyTorch 2.11 is a CUDA build, so there it is Not Run.

Exits 77 (CTest: Not Run) when the CUDA toolkit or LibTorch's CUDA headers are
missing, or when the build itself is a CUDA build (it compiles these already).

usage: check_cuda_sources.py BUILD_DIR SOURCE_DIR
"""
import json
import os
import pathlib
import shlex
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

NOT_RUN = 77


def cuda_include():
    for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda", "/usr"):
        if root and pathlib.Path(root, "include", "cuda_runtime_api.h").exists():
            return pathlib.Path(root, "include")
    return None


def flags_for(entries, build, rel_dir):
    """The compile flags of the target that owns sources in rel_dir."""
    marker = str(build / rel_dir / "CMakeFiles") + "/"
    for e in entries:
        args = shlex.split(e["command"])
        out = args[args.index("-o") + 1] if "-o" in args else ""
        if str(pathlib.Path(e["directory"], out)).startswith(marker) or e["file"].startswith(marker):
            keep, skip = [], False
            for a in args[1:]:
                if skip:
                    skip = False
                    continue
                if a in ("-o", "-include", "-Xclang", "-MF", "-MT"):
                    skip = True
                    continue
                if a in ("-c", "-MD", e["file"]) or "cmake_pch" in a or a.startswith("-Winvalid-pch"):
                    continue
                keep.append(a)
            return args[0], keep, e["directory"]
    return None


def main():
    build, source = pathlib.Path(sys.argv[1]).resolve(), pathlib.Path(sys.argv[2]).resolve()
    cache = (build / "CMakeCache.txt").read_text()
    if "FS_WITH_CUDA:BOOL=ON" in cache:
        print("this is a CUDA build: it compiles the CUDA paths itself; not run")
        return NOT_RUN
    cuda = cuda_include()
    if cuda is None:
        print("no CUDA toolkit headers (cuda_runtime_api.h); not run")
        return NOT_RUN
    entries = json.loads((build / "compile_commands.json").read_text())
    sources = sorted(p for p in (source / "backend").rglob("*.cpp") if "FS_WITH_CUDA" in p.read_text())
    if not sources:
        print("no source mentions FS_WITH_CUDA")
        return 1
    shim = pathlib.Path(tempfile.mkdtemp(prefix="fs_cuda_shim_"))
    # LibTorch's CMake generates this header; Debian's 1.13 package did not ship it
    # (PyTorch's wheel does, with the same definition).
    (shim / "c10/cuda/impl").mkdir(parents=True)
    (shim / "c10/cuda/impl/cuda_cmake_macros.h").write_text("#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n")

    def check(src):
        rel = src.relative_to(source)
        found = flags_for(entries, build, rel.parent)
        if found is None:
            return src, 1, f"no compile command for a target in {rel.parent}"
        compiler, flags, cwd = found
        cmd = [compiler, *flags, "-fsyntax-only", "-DFS_WITH_CUDA", "-DUSE_C10D_NCCL",
               f"-I{cuda}", f"-I{shim}", str(src)]
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
        return src, r.returncode, r.stderr

    failed = 0
    with ThreadPoolExecutor(max_workers=max(1, min(2, os.cpu_count() or 1))) as pool:
        for src, rc, err in pool.map(check, sources):
            print(f"{'ok  ' if rc == 0 else 'FAIL'} {src.relative_to(source)}")
            if rc != 0:
                failed += 1
                print(err[-6000:])
    print(f"{len(sources) - failed} of {len(sources)} CUDA code paths compile (headers: {cuda})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
