#include "backend/data/shards/tar_writer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "backend/data/shards/tar_samples.h"
#include "tests/backend/data/shards/shard_test_util.h"

namespace fs::data {
namespace {

using testing::TempDir;

std::string hex(const std::string& s) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string fileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

struct Entry {
  std::string name, data;
};

std::vector<Entry> entries() {
  std::string binary;
  for (int i = 0; i < 70000; ++i) binary += static_cast<char>(i % 251);
  return {{"000001.jpg", binary},
          {"000001.txt", "a caption"},
          {"000002.json", "{\"text_list\": []}"},
          {"000002.txt", ""},
          {std::string(150, 'd') + "/000003.txt", "long name"},
          {"données/ünï.txt", "unicode name"}};
}

std::string writeShard(const std::string& path) {
  auto w = TarWriter::create(path);
  EXPECT_TRUE(w.isOk()) << w.status().toString();
  if (!w.isOk()) return "";
  for (const Entry& e : entries()) EXPECT_TRUE(w->add(e.name, e.data).isOk()) << e.name;
  EXPECT_TRUE(std::filesystem::exists(path + ".partial"));
  EXPECT_FALSE(std::filesystem::exists(path));
  protocol::Status s = w->finish();
  EXPECT_TRUE(s.isOk()) << s.toString();
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
  return fileBytes(path);
}

TEST(TarWriter, PythonTarfileReadsWhatWeWrite) {
  TempDir dir;
  std::string shard = dir / "s.tar";
  writeShard(shard);
  std::string expected;
  for (const Entry& e : entries()) expected += e.name + "\t644\t0\t" + hex(e.data) + "\n";
  EXPECT_EQ(
      testing::commandOutput(std::string(FS_PYTHON) + " " + testing::script() + " --list '" + shard + "'"),
      expected);
}

TEST(TarWriter, OurReaderReadsItBack) {
  TempDir dir;
  std::string shard = dir / "s.tar";
  writeShard(shard);
  auto reader = TarSampleReader::open(shard);
  ASSERT_TRUE(reader.isOk());
  auto r = testing::readAll(reader.value());
  EXPECT_EQ(testing::shape(r.samples),
            (std::vector<std::string>{"000001:jpg,txt", "000002:json,txt",
                                      std::string(150, 'd') + "/000003:txt", "données/ünï:txt"}));
  ASSERT_EQ(r.samples.size(), 4u);
  EXPECT_EQ(testing::field(r.samples[0], "jpg"), entries()[0].data);
  EXPECT_EQ(reader->drops().total(), 0u);
}

TEST(TarWriter, SameMembersGiveSameBytes) {
  TempDir dir;
  std::string a = writeShard(dir / "a.tar");
  std::string b = writeShard(dir / "b.tar");
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
}

TEST(TarWriter, AbandonedWriterLeavesNoFile) {
  TempDir dir;
  std::string shard = dir / "s.tar";
  {
    auto w = TarWriter::create(shard);
    ASSERT_TRUE(w.isOk());
    ASSERT_TRUE(w->add("a.txt", "x").isOk());
  }
  EXPECT_FALSE(std::filesystem::exists(shard));
  EXPECT_FALSE(std::filesystem::exists(shard + ".partial"));
}

TEST(TarWriter, RefusesUnsafeNamesAndBadPaths) {
  TempDir dir;
  auto w = TarWriter::create(dir / "s.tar");
  ASSERT_TRUE(w.isOk());
  for (std::string bad : {"", "/abs.txt", "../up.txt", "a/../../b.txt", "dir/"})
    EXPECT_EQ(w->add(bad, "x").code(), protocol::Status::Code::kInvalidArgument) << bad;
  EXPECT_TRUE(w->add("ok.txt", "x").isOk());
  EXPECT_TRUE(w->finish().isOk());
  EXPECT_FALSE(w->finish().isOk());
  EXPECT_FALSE(TarWriter::create(dir / "missing-dir/s.tar").isOk());
}

}  // namespace
}  // namespace fs::data
