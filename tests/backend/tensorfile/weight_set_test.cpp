// One lookup over sharded checkpoints: safetensors shards from our writer, a
// Hugging Face style pytorch_model.bin index written by Python, directories.
#include "backend/tensorfile/weight_set.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/backend/tensorfile/tensorfile_test_util.h"

namespace fs::tensorfile {
namespace {

std::vector<std::byte> filled(std::size_t n, int seed) {
  std::vector<std::byte> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::byte>((seed + 13 * i) & 0xFF);
  return out;
}

class ShardedSafetensors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::makeTempDir("ws");
    a_ = filled(24, 1);
    b_ = filled(8, 2);
    c_ = filled(6, 3);
    ASSERT_TRUE(writeSafetensors(dir_ + "/model-00001-of-00002.safetensors",
                                 {{"layers.0.w", DType::kFloat32, {2, 3}, a_},
                                  {"layers.0.b", DType::kFloat64, {1}, b_},
                                  {"unlisted", DType::kUInt8, {1}, std::span(b_).first(1)}})
                    .isOk());
    ASSERT_TRUE(
        writeSafetensors(dir_ + "/model-00002-of-00002.safetensors", {{"head.w", DType::kBFloat16, {3}, c_}})
            .isOk());
    writeIndex(
        R"({"metadata": {"total_size": 38}, "weight_map": {"head.w": "model-00002-of-00002.safetensors",
      "layers.0.b": "model-00001-of-00002.safetensors", "layers.0.w": "model-00001-of-00002.safetensors"}})");
  }
  void writeIndex(const std::string& json) { std::ofstream(dir_ + "/model.safetensors.index.json") << json; }

  std::string dir_;
  std::vector<std::byte> a_, b_, c_;
};

TEST_F(ShardedSafetensors, OneLookupOverAllShards) {
  auto set = WeightSet::openDirectory(dir_);
  ASSERT_TRUE(set.isOk()) << set.status().toString();
  EXPECT_EQ(set->names(), (std::vector<std::string>{"head.w", "layers.0.b", "layers.0.w"}));
  EXPECT_FALSE(set->contains("unlisted"));
  EXPECT_EQ(set->files().size(), 2u);
  EXPECT_EQ(set->indexMetadata().at("total_size"), "38");
  auto w = set->get("layers.0.w");
  ASSERT_TRUE(w.isOk());
  EXPECT_EQ(w->dtype, DType::kFloat32);
  EXPECT_EQ(w->shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(test::hex(w->bytes), test::hex(a_));
  EXPECT_EQ(test::hex(set->get("head.w")->bytes), test::hex(c_));
  EXPECT_EQ(set->fileOf("head.w").value(), dir_ + "/model-00002-of-00002.safetensors");
  EXPECT_EQ(set->get("nope").status().code(), Status::Code::kNotFound);
}

TEST_F(ShardedSafetensors, IndexErrorsNameTheShardAndTensor) {
  writeIndex(R"({"weight_map": {"ghost": "model-00001-of-00002.safetensors"}})");
  auto set = WeightSet::openDirectory(dir_);
  ASSERT_FALSE(set.isOk());
  EXPECT_EQ(set.status().message(),
            dir_ + "/model-00001-of-00002.safetensors: has no tensor 'ghost' (the index maps it here)");
  writeIndex(R"({"weight_map": {"x": "../outside.safetensors"}})");
  set = WeightSet::openDirectory(dir_);
  EXPECT_EQ(set.status().code(), Status::Code::kInvalidArgument);
  writeIndex(R"({"weight_map": {"x": "missing.safetensors"}})");
  set = WeightSet::openDirectory(dir_);
  EXPECT_EQ(set.status().code(), Status::Code::kNotFound);
  writeIndex(R"({"weights": {}})");
  EXPECT_EQ(WeightSet::openDirectory(dir_).status().code(), Status::Code::kCorruption);
}

// Issue 42 (Low): an index whose weight_map names the index itself, or another index
// that names it back, is refused naming the file and the entry (NOTE [Indexes do not nest]).
TEST_F(ShardedSafetensors, AnIndexNamingItselfOrAnotherIndexIsRefusedByEntry) {
  writeIndex(R"({"weight_map": {"head.w": "model-00002-of-00002.safetensors",
                 "loop": "model.safetensors.index.json"}})");
  auto set = WeightSet::openDirectory(dir_);
  ASSERT_FALSE(set.isOk());
  EXPECT_EQ(set.status().code(), Status::Code::kCorruption);
  EXPECT_EQ(set.status().message(), dir_ +
                                        "/model.safetensors.index.json: weight_map['loop'] names "
                                        "'model.safetensors.index.json', the index itself (a cycle); a "
                                        "shard is a weight file");

  // A two-file cycle: a names b, b names a.
  std::ofstream(dir_ + "/b.index.json") << R"({"weight_map": {"back": "model.safetensors.index.json"}})";
  writeIndex(R"({"weight_map": {"next": "b.index.json"}})");
  set = WeightSet::openDirectory(dir_);
  ASSERT_FALSE(set.isOk());
  EXPECT_EQ(set.status().message(), dir_ +
                                        "/model.safetensors.index.json: weight_map['next'] names "
                                        "'b.index.json', another index; indexes do not nest (the files an "
                                        "index names are weight files: .safetensors, torch.save)");
  set = WeightSet::openIndex(dir_ + "/b.index.json");
  ASSERT_FALSE(set.isOk());
  EXPECT_NE(
      set.status().message().find("b.index.json: weight_map['back'] names 'model.safetensors.index.json', "
                                  "another index"),
      std::string::npos)
      << set.status().message();

  // A symlink to the index under a shard's name is the index itself too.
  std::filesystem::create_symlink("model.safetensors.index.json", dir_ + "/alias.safetensors");
  writeIndex(R"({"weight_map": {"alias": "alias.safetensors"}})");
  set = WeightSet::openDirectory(dir_);
  ASSERT_FALSE(set.isOk());
  EXPECT_NE(set.status().message().find("weight_map['alias'] names 'alias.safetensors', the index itself"),
            std::string::npos)
      << set.status().message();
}

TEST(WeightSet, PytorchModelBinIndexFromPython) {
  FS_REQUIRE_FIXTURES();
  auto set = WeightSet::openDirectory(test::fixtureDir() + "/hf_bin");
  ASSERT_TRUE(set.isOk()) << set.status().toString();
  const auto& want = test::expected()["hf_bin"];
  ASSERT_EQ(set->names().size(), want.size());
  for (const auto& name : set->names()) {
    auto v = set->get(name);
    ASSERT_TRUE(v.isOk()) << v.status().toString();
    const std::string expectedCanon = want[name].get<std::string>();
    EXPECT_NE(expectedCanon.find("|" + test::hex(toContiguous(v.value())) + ")"), std::string::npos) << name;
    EXPECT_EQ(
        expectedCanon.rfind("tensor(" + std::string(torchName(v->dtype)) + "|" + test::listText(v->shape), 0),
        0u);
  }
}

TEST(WeightSet, SingleTorchFileAndEmptyDirectory) {
  FS_REQUIRE_FIXTURES();
  auto set = WeightSet::openFile(test::fixtureDir() + "/checkpoint.pt");
  ASSERT_TRUE(set.isOk()) << set.status().toString();
  EXPECT_EQ(set->names(), test::expected()["checkpoint.pt"]["model_keys"].get<std::vector<std::string>>());
  auto empty = WeightSet::openDirectory(test::makeTempDir("empty"));
  EXPECT_EQ(empty.status().code(), Status::Code::kNotFound);
}

}  // namespace
}  // namespace fs::tensorfile
