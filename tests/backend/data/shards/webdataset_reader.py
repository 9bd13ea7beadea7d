"""Oracle for shard_webdataset_reader_oracle_test: what the webdataset library
(the pinned 1.0.2) and OpenFlamingo's own reader make of our shards and of
shard-list patterns. The test compares it with our TarSampleReader and
protocol::expandShards.

  webdataset_reader.py REQUEST.json OUT_DIR

REQUEST.json: {"sets": [{"name", "spec"}, ...], "patterns": [pattern, ...],
               "random_patterns": {"seed", "count"}}
  spec: a shard list as a user writes it (brace patterns joined by "::").

Each set is read by three readers, in tar order, without shuffles:
  webdataset          wds.WebDataset(spec, shardshuffle=False) (its default
                      nodesplitter / workersplitter: one node, no workers)
  tarfile_to_samples  wds.SimpleShardList(spec) -> wds.tarfile_to_samples()
  openflamingo        wds.SimpleShardList(spec) -> OpenFlamingo 2.0.1's own
                      tarfile_to_samples_nothrow (open_flamingo/train/
                      data_utils.py), what its get_laion_dataset /
                      get_mmc4_dataset use, with webdataset's end-of-shard
                      marker off (eof_value=None): with the marker, 1.0.2's
                      tar_file_expander ends every shard with {} that 2.0.1's
                      group_by_keys_nothrow cannot take (KeyError 'fname',
                      also written out as "openflamingo_unmodified").
Patterns are expanded by webdataset's expand_urls (split at "::", then
braceexpand), what SimpleShardList does with a string: the given ones, then
`count` random strings of brace-pattern pieces (random.Random(seed)), less
those that reach braceexpand's two quirks (quirky), which we do not copy:
a "}" before any "{" lowers its depth count below 0 and a later "{" makes
up for it (it then reads "}{" as balanced; we refuse the "}"), and a
backslash inside a brace group is removed once per enclosing group ("{\\\\0}"
gives "{0}"; we remove it once).

OUT_DIR/answer.json:
  {"sets": {name: {reader: {"samples": [{"key", "url", "members": [[ext, offset, size], ...]}],
                            "error": null | "Type: message"}}},
   "openflamingo_unmodified": null | "Type: message",
   "expansions": [{"pattern", "urls"} | {"pattern", "error"}]}
Member bytes in OUT_DIR/bytes.bin at [offset, offset + size). Members are in
the order the reader put them into the sample (tar order).
Exit 0 done, 77 a package is missing (the test skips outside CI, fails under
CI=true), anything else an error.
"""
import json
import os
import random
import sys

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing here may reach a hub
os.environ["TRANSFORMERS_OFFLINE"] = "1"

try:
    import open_flamingo
    import webdataset as wds
    from webdataset.shardlists import expand_urls
    from webdataset.tariterators import tar_file_expander, url_opener

    # data_utils.py sits beside data.py; import it as data.py does.
    sys.path.insert(0, os.path.join(os.path.dirname(open_flamingo.__file__), "train"))
    import data_utils as of_data_utils  # open_flamingo/train/data_utils.py
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"webdataset_reader.py: {e} (the project's Python environment: scripts/install-deps.sh)",
          file=sys.stderr)
    sys.exit(77)


def raise_it(exn):
    """A handler that stops at the first error, so the test sees it."""
    raise exn


def openflamingo_samples(src):
    """2.0.1's tarfile_to_samples_nothrow, stage for stage, marker off (see the docstring)."""
    streams = url_opener(src, handler=raise_it)
    files = tar_file_expander(streams, handler=raise_it, eof_value=None)
    return of_data_utils.group_by_keys_nothrow(files, handler=raise_it)


READERS = {
    "webdataset": lambda spec: wds.WebDataset(spec, shardshuffle=False, empty_check=False),
    "tarfile_to_samples": lambda spec: wds.DataPipeline(wds.SimpleShardList(spec), wds.tarfile_to_samples()),
    "openflamingo": lambda spec: wds.DataPipeline(wds.SimpleShardList(spec), openflamingo_samples),
}


class Bytes:
    def __init__(self, path):
        self.f = open(path, "wb")
        self.offset = 0

    def add(self, data):
        start = self.offset
        self.f.write(data)
        self.offset += len(data)
        return start


def read(reader, spec, out):
    samples, error = [], None
    try:
        for s in READERS[reader](spec):
            members = [[k, out.add(v), len(v)] for k, v in s.items() if not k.startswith("__")]
            samples.append({"key": s["__key__"], "url": s["__url__"], "members": members})
    except Exception as e:  # the test says whether an error is expected
        error = f"{type(e).__name__}: {e}"
    return {"samples": samples, "error": error}


def quirky(pattern):
    """Whether braceexpand's scan (escapes skipped) goes below depth 0, or
    meets a backslash inside braces."""
    depth, pos = 0, 0
    while pos < len(pattern):
        c = pattern[pos]
        if c == "\\":
            if depth > 0:
                return True
            pos += 2
            continue
        depth += {"{": 1, "}": -1}.get(c, 0)
        if depth < 0:
            return True
        pos += 1
    return False


def main(request_path, out_dir):
    with open(request_path) as f:
        req = json.load(f)
    os.makedirs(out_dir, exist_ok=True)
    out = Bytes(os.path.join(out_dir, "bytes.bin"))
    answer = {"sets": {}, "expansions": []}
    for s in req["sets"]:
        answer["sets"][s["name"]] = {r: read(r, s["spec"], out) for r in READERS}
    try:  # OpenFlamingo's reader exactly as 2.0.1 ships it, on the first set
        list(wds.DataPipeline(wds.SimpleShardList(req["sets"][0]["spec"]),
                              lambda src: of_data_utils.tarfile_to_samples_nothrow(src, handler=raise_it)))
        answer["openflamingo_unmodified"] = None
    except Exception as e:
        answer["openflamingo_unmodified"] = f"{type(e).__name__}: {e}"
    rng = random.Random(req["random_patterns"]["seed"])
    pieces = ["{", "}", "{", "}", ",", "..", "\\", "a", "p", "Z", "0", "1", "-", "09", "x{0..2}", "{a,b}", "\\{"]
    randoms = []
    while len(randoms) < req["random_patterns"]["count"]:
        pattern = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 10)))
        if not quirky(pattern):
            randoms.append(pattern)
    for pattern in req["patterns"] + randoms:
        try:
            answer["expansions"].append({"pattern": pattern, "urls": expand_urls(pattern)})
        except Exception as e:
            answer["expansions"].append({"pattern": pattern, "error": f"{type(e).__name__}: {e}"})
    out.f.close()
    with open(os.path.join(out_dir, "answer.json"), "w") as f:
        json.dump(answer, f)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2])
