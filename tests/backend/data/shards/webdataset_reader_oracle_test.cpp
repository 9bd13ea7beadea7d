// Our shard reader against the webdataset library (the pinned 1.0.2) and
// OpenFlamingo 2.0.1's own reader on the same real shards, sample for
// sample: keys and shard URLs in the same order, the same members per
// sample, byte for byte. Our side is what ShardSource's workers do: the spec
// expanded by protocol::expandShards (ShardPlan::create), each shard read by
// TarSampleReader. webdataset_reader.py runs the other side, one process for
// all cases:
//   - generated: make-synthetic's LAION and MMC4 shards (real JPEGs, some
//     samples broken by bad_every, which no reader judges) named by its brace
//     patterns joined by "::", plus the hand-made LAION tar of
//     openflamingo_data_oracle_test (png / jpeg members, a sample without txt);
//   - odd-names: member names at the edges of webdataset's grouping rules.
// And shard-list patterns expand as webdataset's expand_urls (braceexpand).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "backend/data/shardgen/synthetic_shards.h"
#include "backend/data/shards/tar_samples.h"
#include "backend/data/shards/tar_writer.h"
#include "backend/protocol/config/shard_pattern.h"
#include "tests/backend/data/crafted_shards.h"
#include "tests/fixtures/fixture_unavailable.h"

namespace fs::data {
namespace {

namespace stdfs = std::filesystem;
using nlohmann::json;

const char* const kReaders[] = {"webdataset", "tarfile_to_samples", "openflamingo"};

// Member names at the edges of the grouping rules (NOTE [Sample grouping]):
// a directory and a two-part upper-case extension, a repeated extension (a
// new sample with the same key), "__x__" stems (samples: only a top-level
// name that starts and ends with "__" is skipped, "__index__" and
// "__k__.a__"), names without a usable extension, an empty extension ("z."),
// keys that come back later.
const std::vector<std::string> kOddNames = {
    "dir/a.b.JPG", "dir/a.txt", "x.json", "x.txt",   "x.TXT",       "__meta__.json", "__index__",
    "noext",       "z.",        ".hid",   "y.txt",   "d/__x__.txt", "d.x/a",         "x..y",
    "y2.Txt",      "y2.cls",    "y.jpg",  "dir/a.c", "__k__.a__",
};

// Random strings of pattern pieces ("{", "}", ",", "..", "\\", letters, digits,
// "-", groups) the oracle adds after kPatterns.
constexpr int kRandomPatterns = 4000;

// Shard lists as users write them; the URLs are only expanded, never opened.
const std::vector<std::string> kPatterns = {
    "shard-{000000..000009}.tar",
    "/d/a-{0..10..3}.tar",
    "{a,b}-{1..2}.tar",
    "x{09..11}",
    "x{10..7}",
    "{a,{b,c}d}e",
    "plain.tar",
    "a.tar::b-{1..3}.tar",
    "pipe:cat /d/{0..2}.tar",
    "{1..3}{x,y}",
    "s3://b/{00..02}/{a,b}.tar",
    // The edges of braceexpand (NOTE [braceexpand grammar]): literal braces,
    // letter ranges, steps, padding, negative numbers, empty alternatives,
    // escapes, a pipe made by a letter range; the last three it refuses.
    "{a}",
    "{}",
    "{{a,b}}",
    "/d/{0..x}.tar",
    "{1..2,3}",
    "{a..e..2}",
    "{Y..b}",
    "{c..a}",
    "{z..A..10}",
    "{o..p}ipe:cat x",
    "{0..4..-2}",
    "{1..3..0}",
    "{-01..1}",
    "{-0..2}",
    "{-3..-05}",
    "a\\{b,c\\}",
    "{1\\{2,3}",
    "a\\,b{x\\,y,z}",
    "back\\\\slash",
    "trailing\\",
    "x{05..1}",
    "{-1..1}",
    "{001..3}",
    "{1..010}",
    "{a,}",
    "{,a}",
    "{a,b",
    "a}b",
    "{a,b}}",
};

std::string readText(const stdfs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Our reader over a spec: expandShards, then TarSampleReader per shard.
std::vector<Sample> readOurs(const std::string& spec) {
  auto urls = protocol::expandShards(spec);
  EXPECT_TRUE(urls) << urls.status().message();
  std::vector<Sample> out;
  if (!urls) return out;
  for (const auto& url : urls.value()) {
    auto reader = TarSampleReader::open(url);
    EXPECT_TRUE(reader) << reader.status().message();
    if (!reader) continue;
    for (;;) {
      auto s = reader->next();
      EXPECT_TRUE(s) << s.status().message();
      if (!s || !s->has_value()) break;
      out.push_back(std::move(**s));
    }
  }
  return out;
}

std::string writeOddTar(const std::string& path) {
  auto w = TarWriter::create(path);
  if (!w) return w.status().message();
  for (const auto& name : kOddNames) {
    if (auto st = w->add(name, std::string_view("bytes of " + name)); !st) return st.message();
  }
  if (auto st = w->finish(); !st) return st.message();
  return {};
}

class WebdatasetReaderOracle : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new stdfs::path(stdfs::path(FS_BINARY_DIR) / "tests" / "shard_webdataset_reader_oracle");
    stdfs::remove_all(*dir_);
    SyntheticShardOptions o;
    o.outDir = (*dir_ / "shards").string();
    o.laionShards = 2;
    o.laionSamplesPerShard = 12;
    o.mmc4Shards = 2;
    o.mmc4DocsPerShard = 6;
    o.imageWidth = 64;
    o.imageHeight = 48;
    o.badEvery = 5;
    o.seed = 3;
    auto written = writeSyntheticShards(o);
    if (!written) {
      error_ = new std::string("make-synthetic: " + written.status().message());
      return;
    }
    const std::string crafted = (*dir_ / "laion-crafted.tar").string();
    if (std::string e = test::writeCraftedLaion(written->laionFiles.front(), crafted); !e.empty()) {
      error_ = new std::string(e);
      return;
    }
    const std::string odd = (*dir_ / "odd-names.tar").string();
    if (std::string e = writeOddTar(odd); !e.empty()) {
      error_ = new std::string(e);
      return;
    }
    specs_ = new std::map<std::string, std::string>{
        {"generated", written->laionShards + "::" + written->mmc4Shards + "::" + crafted},
        {"odd-names", odd}};
    const json request = {{"sets",
                           {{{"name", "generated"}, {"spec", specs_->at("generated")}},
                            {{"name", "odd-names"}, {"spec", specs_->at("odd-names")}}}},
                          {"patterns", kPatterns},
                          {"random_patterns", {{"seed", 41}, {"count", kRandomPatterns}}}};
    std::ofstream(*dir_ / "request.json") << request.dump();
    const stdfs::path out = *dir_ / "reference";
    const std::string cmd =
        std::string(FS_PYTHON) + " " + FS_SOURCE_DIR + "/tests/backend/data/shards/webdataset_reader.py " +
        (*dir_ / "request.json").string() + " " + out.string() + " 2>" + (*dir_ / "oracle.log").string();
    const int rc = std::system(cmd.c_str());
    const int code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    if (code == 77 || code == 127) {  // a package missing, or FS_PYTHON itself
      unavailable_ =
          new std::string("webdataset / open_flamingo cannot run: " + readText(*dir_ / "oracle.log"));
      return;
    }
    if (code != 0) {
      error_ = new std::string("oracle failed (" + cmd + "):\n" + readText(*dir_ / "oracle.log"));
      return;
    }
    answer_ = new json(json::parse(readText(out / "answer.json")));
    bytes_ = new std::string(readText(out / "bytes.bin"));
  }

  void SetUp() override {
    if (error_) FAIL() << *error_;
    if (unavailable_) FS_FIXTURE_UNAVAILABLE(*unavailable_);
  }

  // The reader's samples equal ours, in order; `prefixOnly`: the reader
  // stopped at an error, so its samples are the first of ours. Returns how
  // many samples were compared.
  static size_t expectSame(const std::vector<Sample>& ours, const json& theirs, const std::string& what,
                           bool prefixOnly) {
    const json& samples = theirs["samples"];
    if (prefixOnly) {
      EXPECT_LE(samples.size(), ours.size()) << what;
    } else {
      EXPECT_EQ(samples.size(), ours.size()) << what;
    }
    const size_t n = std::min(samples.size(), ours.size());
    for (size_t i = 0; i < n; ++i) {
      const json& t = samples[i];
      const Sample& o = ours[i];
      const std::string where = what + " sample " + std::to_string(i) + " (ours " + o.key + ")";
      EXPECT_EQ(t["key"], o.key) << where;
      EXPECT_EQ(t["url"], o.url) << where;
      std::map<std::string, std::string> members;
      for (const json& m : t["members"]) {
        members[m[0].get<std::string>()] = bytes_->substr(m[1].get<size_t>(), m[2].get<size_t>());
      }
      std::map<std::string, std::string> mine;
      for (const auto& [ext, b] : o.fields) mine[ext] = std::string(b.begin(), b.end());
      EXPECT_EQ(members.size(), mine.size()) << where;
      for (const auto& [ext, b] : mine) {
        auto it = members.find(ext);
        if (it == members.end()) {
          ADD_FAILURE() << where << ": the reader has no member ." << ext;
          continue;
        }
        EXPECT_TRUE(it->second == b) << where << " ." << ext << ": " << it->second.size() << " bytes, ours "
                                     << b.size() << ", not the same bytes";
      }
      for (const auto& [ext, b] : members) {
        EXPECT_TRUE(mine.count(ext)) << where << ": ours has no member ." << ext;
      }
    }
    return n;
  }

  static stdfs::path* dir_;
  static std::string* error_;
  static std::string* unavailable_;
  static std::map<std::string, std::string>* specs_;
  static json* answer_;
  static std::string* bytes_;
};

stdfs::path* WebdatasetReaderOracle::dir_ = nullptr;
std::string* WebdatasetReaderOracle::error_ = nullptr;
std::string* WebdatasetReaderOracle::unavailable_ = nullptr;
std::map<std::string, std::string>* WebdatasetReaderOracle::specs_ = nullptr;
json* WebdatasetReaderOracle::answer_ = nullptr;
std::string* WebdatasetReaderOracle::bytes_ = nullptr;

TEST_F(WebdatasetReaderOracle, GeneratedShardsReadTheSameByEveryReader) {
  const std::vector<Sample> ours = readOurs(specs_->at("generated"));
  ASSERT_EQ(ours.size(), 2 * 12 + 2 * 6 + 9u);
  for (const char* reader : kReaders) {
    const json& theirs = (*answer_)["sets"]["generated"][reader];
    EXPECT_TRUE(theirs["error"].is_null()) << reader << ": " << theirs["error"];
    const size_t n = expectSame(ours, theirs, std::string("generated, ") + reader, false);
    std::printf("generated shards, %s: %zu samples, the same as ours\n", reader, n);
  }
}

// OpenFlamingo's reader (a repeated extension starts a new sample) groups as
// ours on every odd name. webdataset's own group_by_keys raises on the
// repeated extension ("x.TXT" after "x.txt"); up to there it agrees too.
TEST_F(WebdatasetReaderOracle, OddMemberNamesGroupAsOpenFlamingoReadsThem) {
  const std::vector<Sample> ours = readOurs(specs_->at("odd-names"));
  const json& of = (*answer_)["sets"]["odd-names"]["openflamingo"];
  EXPECT_TRUE(of["error"].is_null()) << of["error"];
  expectSame(ours, of, "odd names, openflamingo", false);
  for (const char* reader : {"webdataset", "tarfile_to_samples"}) {
    const json& theirs = (*answer_)["sets"]["odd-names"][reader];
    ASSERT_TRUE(theirs["error"].is_string()) << reader << " now reads a repeated extension; update this test";
    EXPECT_NE(theirs["error"].get<std::string>().find("duplicate file name"), std::string::npos)
        << theirs["error"];
    const size_t n = expectSame(ours, theirs, std::string("odd names, ") + reader, true);
    EXPECT_EQ(n, 1u) << reader << " stops at the repeated extension of the second sample";
  }
  std::vector<std::string> keys;
  for (const auto& s : ours) keys.push_back(s.key);
  const std::vector<std::string> expected = {"dir/a",   "x", "x",  "__meta__", "z",    "y",
                                             "d/__x__", "x", "y2", "y",        "dir/a"};
  EXPECT_EQ(keys, expected);
}

// 2.0.1's tarfile_to_samples_nothrow as shipped cannot read any shard with
// webdataset 1.0.2: the end-of-shard marker ({}) raises KeyError 'fname'
// (docs/data.md, "Checked against OpenFlamingo's own code").
TEST_F(WebdatasetReaderOracle, OpenFlamingoReaderAsShippedFailsWithThePinnedWebdataset) {
  const json& e = (*answer_)["openflamingo_unmodified"];
  ASSERT_TRUE(e.is_string())
      << "2.0.1's reader now runs unchanged: drop eof_value=None in webdataset_reader.py "
         "and openflamingo_data.py, and update docs/data.md";
  EXPECT_EQ(e.get<std::string>(), "KeyError: 'fname'");
}

TEST_F(WebdatasetReaderOracle, ShardPatternsExpandAsWebdataset) {
  ASSERT_EQ((*answer_)["expansions"].size(), kPatterns.size() + kRandomPatterns);
  int expanded = 0;
  for (const json& x : (*answer_)["expansions"]) {
    const std::string pattern = x["pattern"];
    auto ours = protocol::expandShards(pattern);
    if (x.contains("error")) {
      EXPECT_FALSE(ours) << pattern << ": webdataset refuses it (" << x["error"] << "), we expand it";
      EXPECT_FALSE(protocol::countShards(pattern)) << pattern;
      continue;
    }
    EXPECT_TRUE(ours) << pattern << ": " << ours.status().message() << "; webdataset: " << x["urls"];
    if (!ours) continue;
    EXPECT_EQ(x["urls"].get<std::vector<std::string>>(), ours.value()) << pattern;
    ++expanded;
    auto count = protocol::countShards(pattern);
    EXPECT_TRUE(count) << pattern;
    if (!count) continue;
    EXPECT_EQ(count.value(), ours->size()) << pattern;
    if (pattern.find("::") == std::string::npos) {  // pipe approval counts the pipes without expanding
      uint64_t pipes = 0;
      for (const auto& url : x["urls"]) pipes += url.get<std::string>().rfind("pipe:", 0) == 0;
      auto counted = protocol::countPipeShards(pattern);
      ASSERT_TRUE(counted) << pattern;
      EXPECT_EQ(counted.value(), pipes) << pattern;
    }
  }
  std::printf("patterns: %zu, %d expanded by both, the rest refused by both\n",
              (*answer_)["expansions"].size(), expanded);
  EXPECT_GT(expanded, kRandomPatterns / 4);
}

}  // namespace
}  // namespace fs::data
