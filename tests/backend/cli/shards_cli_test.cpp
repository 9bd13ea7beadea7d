// `flamingo-train shards ...` through the real binary: make-synthetic,
// inspect, validate (counts per reason, exit 1 on broken samples), and
// convert-mmc4 on MMC4-style input made by Python's zipfile and PIL, read
// back by Python's tarfile / base64 / PIL.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/backend/cli/cli_test_util.h"

namespace {

namespace fsys = std::filesystem;

using fs::cli::testing::Result;
using fs::cli::testing::slurp;

class ShardsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fsys::temp_directory_path() / ("fs_shards_cli_" + std::to_string(::getpid()) + "_" +
                                          ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fsys::remove_all(dir_);
    fsys::create_directories(dir_);
  }
  void TearDown() override { fsys::remove_all(dir_); }

  Result sh(const std::string& cmd) { return fs::cli::testing::runShell(cmd, dir_, dir_); }
  Result cli(const std::string& args) {
    return sh("'" + std::string(FS_BINARY_DIR) + "/bin/flamingo-train' " + args);
  }

  void makeShards(const std::string& out, const std::string& extra = "") {
    Result r = cli(
        "shards make-synthetic --out " + out +
        " --laion-shards 2 --laion-samples 12 --mmc4-shards 2 --mmc4-docs 6 --width 64 --height 48 " + extra);
    ASSERT_EQ(r.code, 0) << r.err;
  }

  fsys::path dir_;
};

TEST_F(ShardsCli, MakeSyntheticWritesShardsAndATokenizer) {
  makeShards("data");
  for (const char* f :
       {"laion-000000.tar", "laion-000001.tar", "mmc4-000000.tar", "mmc4-000001.tar", "tokenizer/vocab.json",
        "tokenizer/merges.txt", "tokenizer/special_tokens_map.json"}) {
    EXPECT_TRUE(fsys::exists(dir_ / "data" / f)) << f;
  }
  // Python's tarfile lists the members (the shards are plain tars).
  Result py =
      sh(std::string(FS_PYTHON) +
         " -c \"import tarfile; t = tarfile.open('data/laion-000000.tar'); print(len(t.getnames()))\"");
  ASSERT_EQ(py.code, 0) << py.err;
  EXPECT_EQ(py.out, "36\n");  // 12 samples x (jpg, txt, json)
  Result again =
      cli("shards make-synthetic --out data2 --laion-shards 2 --laion-samples 12 --mmc4-shards 2 "
          "--mmc4-docs 6 --width 64 --height 48");
  ASSERT_EQ(again.code, 0);
  EXPECT_EQ(slurp(dir_ / "data" / "mmc4-000001.tar"),
            slurp(dir_ / "data2" / "mmc4-000001.tar"));  // reproducible
}

TEST_F(ShardsCli, ValidateCountsReasonsAndFailsOnBrokenSamples) {
  makeShards("good");
  Result ok =
      cli("shards validate 'good/laion-{000000..000001}.tar' 'good/mmc4-{000000..000001}.tar' "
          "--tokenizer good/tokenizer --image-size 32 --max-images 3");
  EXPECT_EQ(ok.code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("4 shard(s), 36 samples"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("0 broken"), std::string::npos) << ok.out;

  makeShards("bad", "--bad-every 4");
  Result bad = cli("shards validate 'bad/laion-{000000..000001}.tar::bad/mmc4-{000000..000001}.tar'");
  EXPECT_EQ(bad.code, 1) << bad.out << bad.err;
  EXPECT_NE(bad.out.find("bad_image"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("bad_base64"), std::string::npos) << bad.out;

  Result inspect = cli("shards inspect bad/laion-000000.tar --limit 4");
  EXPECT_EQ(inspect.code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("DROPPED bad_image"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("12 samples"), std::string::npos) << inspect.out;

  Result usage = cli("shards validate good/laion-000000.tar --type coco");
  EXPECT_EQ(usage.code, 2);
  EXPECT_NE(usage.err.find("--type must be laion or mmc4"), std::string::npos) << usage.err;
}

// On a terminal (a pseudo-terminal made by Python's pty), validate draws its
// progress line on stderr and erases it at the end; piped, stderr has none.
TEST_F(ShardsCli, ValidateShowsAProgressLineOnATerminalOnly) {
  makeShards("good");
  const std::string args =
      "shards validate 'good/laion-{000000..000001}.tar' 'good/mmc4-{000000..000001}.tar'";
  {
    std::ofstream py(dir_ / "on_pty.py");
    py << "import os, pty, sys\n"
          "pid, fd = pty.fork()\n"
          "if pid == 0:\n"
          "    os.execv(sys.argv[1], sys.argv[1:])\n"
          "chunks = []\n"
          "while True:\n"
          "    try:\n"
          "        data = os.read(fd, 65536)\n"
          "    except OSError:\n"
          "        break\n"
          "    if not data:\n"
          "        break\n"
          "    chunks.append(data)\n"
          "_, status = os.waitpid(pid, 0)\n"
          "sys.stdout.buffer.write(b''.join(chunks))\n"
          "sys.exit(os.waitstatus_to_exitcode(status))\n";
  }
  Result tty =
      sh("/usr/bin/python3 on_pty.py '" + std::string(FS_BINARY_DIR) + "/bin/flamingo-train' " + args);
  ASSERT_EQ(tty.code, 0) << tty.out << tty.err;
  const auto lastDraw = tty.out.rfind("\rvalidate: ");
  ASSERT_NE(lastDraw, std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("/4 shards"), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("\r\x1b[K", lastDraw + 1), std::string::npos) << "the line is erased at the end";
  EXPECT_NE(tty.out.find("4 shard(s), 36 samples"), std::string::npos) << tty.out;

  Result piped = cli(args);
  ASSERT_EQ(piped.code, 0) << piped.err;
  EXPECT_EQ(piped.err.find("validate: "), std::string::npos) << piped.err;
  EXPECT_EQ(piped.err.find("\x1b[K"), std::string::npos) << piped.err;
  EXPECT_EQ(piped.out.find('\r'), std::string::npos) << piped.out;
  EXPECT_NE(piped.out.find("4 shard(s), 36 samples"), std::string::npos) << piped.out;
}

TEST_F(ShardsCli, ConvertMmc4FromZipsAndImages) {
  // MMC4's release layout, made by Python: docs_<i>.zip holding one jsonl,
  // images in images/<i>/<image_name>; one image missing, one unsafe name.
  const std::string script = R"PY(
import io, json, os, zipfile
from PIL import Image
import numpy as np
rng = np.random.default_rng(0)
for z in range(2):
    os.makedirs(f"images/{z}", exist_ok=True)
    lines = []
    for d in range(3):
        info = []
        for i in range(2):
            name = f"{z}_{d}_{i}.png"
            Image.fromarray(rng.integers(0, 255, (80, 100, 3), dtype=np.uint8)).save(f"images/{z}/{name}")
            info.append({"image_name": name, "raw_url": "http://x/" + name, "matched_text_index": i, "matched_sim": 0.3})
        if z == 1 and d == 2:
            info.append({"image_name": "gone.jpg", "raw_url": "http://x/gone", "matched_text_index": 0, "matched_sim": 0.3})
            info.append({"image_name": "../../etc/passwd", "raw_url": "http://x/p", "matched_text_index": 0, "matched_sim": 0.3})
        doc = {"text_list": ["first sentence.", "second one."], "image_info": info,
               "similarity_matrix": [[0.3, 0.1] for _ in info]}
        lines.append(json.dumps(doc))
    lines.append("{not json")
    with zipfile.ZipFile(f"docs_{z}.zip", "w") as zf:
        zf.writestr(f"docs_{z}.jsonl", "\n".join(lines) + "\n")
)PY";
  std::ofstream(dir_ / "make.py") << script;
  Result made = sh(std::string(FS_PYTHON) + " make.py");
  ASSERT_EQ(made.code, 0) << made.err;

  Result dry = cli("shards convert-mmc4 --documents 'docs_{0..1}.zip' --images images --out out --dry-run");
  ASSERT_EQ(dry.code, 0) << dry.err;
  EXPECT_NE(
      dry.out.find("2 file(s), 6 documents (2 bad lines); images: 12 found, 1 missing, 0 unreadable, 1 with "
                   "unsafe names; 0 shard(s) written"),
      std::string::npos)
      << dry.out;
  EXPECT_FALSE(fsys::exists(dir_ / "out"));

  Result real =
      cli("shards convert-mmc4 --documents 'docs_{0..1}.zip' --images images --out out --docs-per-shard 4");
  ASSERT_EQ(real.code, 0) << real.err;
  EXPECT_NE(real.out.find("2 shard(s) written"), std::string::npos) << real.out;
  EXPECT_FALSE(fsys::exists(dir_ / "etc"));

  // Python reads the shards back: every found image is a JPEG of its source's size.
  const std::string check = R"PY(
import base64, io, json, tarfile
from PIL import Image
n = 0
for shard in ["out/000000000.tar", "out/000000001.tar"]:
    for m in tarfile.open(shard):
        doc = json.load(tarfile.open(shard).extractfile(m))
        for info in doc["image_info"]:
            if "image_base64" in info:
                img = Image.open(io.BytesIO(base64.b64decode(info["image_base64"])))
                assert img.format == "JPEG" and img.size == (100, 80), (img.format, img.size)
                n += 1
print(n)
)PY";
  std::ofstream(dir_ / "check.py") << check;
  Result py = sh(std::string(FS_PYTHON) + " check.py");
  ASSERT_EQ(py.code, 0) << py.err;
  EXPECT_EQ(py.out, "12\n");
  Result v = cli("shards validate 'out/{000000000..000000001}.tar' --type mmc4 --threshold 0.2");
  EXPECT_NE(v.out.find("6 samples"), std::string::npos) << v.out;
}

}  // namespace
