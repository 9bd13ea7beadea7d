"""Test oracle: builds (odd) tar shards with Python's tarfile from a JSON spec.

usage: make_shard.py SPEC.json OUT.tar      -- build a shard
       make_shard.py --list SHARD.tar       -- print "name<TAB>mode<TAB>mtime<TAB>hex(data)" per member

spec = {"format": "ustar" | "gnu" | "pax", "gzip": false,
        "members": [{"name": str, "type": "file" | "dir" | "symlink" | "hardlink" | "fifo" | "chr",
                     "data": str (UTF-8), "repeat": int (data repeated), "link": str}],
        "truncate": {"member": str, "at": "header" | "data", "plus": int},   # optional
        "garble": str}                                                         # optional: member whose header is overwritten
"""
import io
import json
import sys
import tarfile

TYPES = {"file": tarfile.REGTYPE, "dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE,
         "hardlink": tarfile.LNKTYPE, "fifo": tarfile.FIFOTYPE, "chr": tarfile.CHRTYPE}
FORMATS = {"ustar": tarfile.USTAR_FORMAT, "gnu": tarfile.GNU_FORMAT, "pax": tarfile.PAX_FORMAT}


def build(spec, out):
    with tarfile.open(out, "w:gz" if spec.get("gzip") else "w", format=FORMATS[spec.get("format", "ustar")]) as tar:
        for m in spec["members"]:
            info = tarfile.TarInfo(m["name"])
            info.type = TYPES[m.get("type", "file")]
            info.mtime = 1700000000
            info.mode = 0o755 if info.type == tarfile.DIRTYPE else 0o644
            info.linkname = m.get("link", "")
            data = m.get("data", "").encode() * m.get("repeat", 1) if info.type == tarfile.REGTYPE else b""
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data else None)
    cut = spec.get("truncate")
    garble = spec.get("garble")
    if not cut and not garble:
        return
    with tarfile.open(out) as tar:
        where = {m.name: m for m in tar.getmembers()}
    with open(out, "r+b") as f:
        if garble:
            f.seek(where[garble].offset)
            f.write(b"not a tar header! " * 28)
        if cut:
            m = where[cut["member"]]
            f.truncate((m.offset if cut["at"] == "header" else m.offset_data) + cut["plus"])


def listing(path):
    with tarfile.open(path) as tar:
        for m in tar.getmembers():
            data = tar.extractfile(m).read() if m.isreg() else b""
            print(f"{m.name}\t{m.mode:o}\t{m.mtime}\t{data.hex()}")


if __name__ == "__main__":
    if sys.argv[1] == "--list":
        listing(sys.argv[2])
    else:
        with open(sys.argv[1], encoding="utf-8") as f:
            build(json.load(f), sys.argv[2])
