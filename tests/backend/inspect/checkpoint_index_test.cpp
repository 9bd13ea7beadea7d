// CheckpointIndex and ModuleTree against files Python's torch.save wrote
// (make_checkpoints.py): every tensor listed with torch's section, dtype,
// shape and bytes; tied weights found; elements bit-equal to torch's,
// including a sharded member gathered from two rank files; our manifest's
// trainability and hashes applied; counts and bytes at every tree level.
// Damaged inputs give errors naming the file.
#include "backend/inspect/checkpoint_index.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "backend/inspect/checkpoint_diff.h"
#include "backend/inspect/module_tree.h"
#include "backend/tensorfile/safetensors.h"

namespace fs::inspect {
namespace {

namespace tf = fs::tensorfile;

class CheckpointIndexTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(
        (std::filesystem::temp_directory_path() / ("fs_inspect_" + std::to_string(::getpid()))).string());
    const std::string cmd = std::string(FS_PYTHON) + " " + FS_SOURCE_DIR +
                            "/tests/backend/inspect/make_checkpoints.py " + *dir_ + " > /dev/null";
    ok_ = std::system(cmd.c_str()) == 0;
    if (ok_) {
      std::ifstream in(*dir_ + "/expected.json");
      expected_ = new nlohmann::json(nlohmann::json::parse(in));
    }
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    std::filesystem::remove_all(*dir_, ec);
    delete dir_;
    delete expected_;
  }
  void SetUp() override {
    ASSERT_TRUE(ok_) << "make_checkpoints.py failed (needs " FS_PYTHON
                        " with torch: run scripts/install-deps.sh)";
  }

  static std::string path(const std::string& name) { return *dir_ + "/" + name; }
  static const nlohmann::json& expected(const std::string& name) { return expected_->at(name); }

  static std::string hexOf(const TensorData& d) {
    static const char* digits = "0123456789abcdef";
    const auto packed = tf::toContiguous(d.view);
    std::string out;
    for (std::byte b : packed) {
      out += digits[static_cast<unsigned>(b) >> 4];
      out += digits[static_cast<unsigned>(b) & 15];
    }
    return out;
  }

  // Every tensor as torch listed it, with its bytes.
  static void expectSameAsTorch(const CheckpointIndex& ckpt, const nlohmann::json& want) {
    ASSERT_EQ(ckpt.tensors().size(), want.at("tensors").size());
    EXPECT_EQ(std::string(formatName(ckpt.format())), want.at("format").get<std::string>());
    for (std::size_t i = 0; i < ckpt.tensors().size(); ++i) {
      const TensorEntry& t = ckpt.tensors()[i];
      const auto& w = want.at("tensors")[i];
      SCOPED_TRACE(t.name);
      EXPECT_EQ(t.name, w.at("name").get<std::string>());
      EXPECT_EQ(std::string(sectionName(t.section)), w.at("section").get<std::string>());
      EXPECT_EQ(std::string(tf::torchName(t.dtype)), w.at("dtype").get<std::string>());
      EXPECT_EQ(t.shape, w.at("shape").get<std::vector<std::int64_t>>());
      EXPECT_EQ(t.bytes, w.at("bytes").get<std::uint64_t>());
      if (w.at("tied_to").is_null()) {
        EXPECT_FALSE(t.sameAs.has_value());
      } else {
        ASSERT_TRUE(t.sameAs.has_value());
        EXPECT_EQ(ckpt.tensors()[*t.sameAs].name, w.at("tied_to").get<std::string>());
      }
      auto data = ckpt.data(i);
      ASSERT_TRUE(data.isOk()) << data.status().message();
      EXPECT_EQ(hexOf(data.value()), w.at("hex").get<std::string>());
    }
  }

  static std::string* dir_;
  static nlohmann::json* expected_;
  static bool ok_;
};

std::string* CheckpointIndexTest::dir_ = nullptr;
nlohmann::json* CheckpointIndexTest::expected_ = nullptr;
bool CheckpointIndexTest::ok_ = false;

TEST_F(CheckpointIndexTest, OpenFlamingoCheckpointListsEveryTensorAsTorchDoes) {
  auto ckpt = CheckpointIndex::open(path("openflamingo.pt"));
  ASSERT_TRUE(ckpt.isOk()) << ckpt.status().message();
  expectSameAsTorch(ckpt.value(), expected("openflamingo.pt"));
  EXPECT_FALSE(ckpt->manifest().has_value());
  ASSERT_NE(ckpt->root(), nullptr);
  EXPECT_EQ(ckpt->files().size(), 1u);
  EXPECT_EQ(ckpt->fileBytes(), std::filesystem::file_size(path("openflamingo.pt")));
  for (const auto& t : ckpt->tensors()) EXPECT_FALSE(t.trainable.has_value()) << t.name;  // nothing says
}

TEST_F(CheckpointIndexTest, BareStateDict) {
  auto ckpt = CheckpointIndex::open(path("state_dict.bin"));
  ASSERT_TRUE(ckpt.isOk()) << ckpt.status().message();
  expectSameAsTorch(ckpt.value(), expected("state_dict.bin"));
}

TEST_F(CheckpointIndexTest, OursCarriesTrainabilityAndHashesFromItsManifest) {
  auto ckpt = CheckpointIndex::open(path("ours.pt"));
  ASSERT_TRUE(ckpt.isOk()) << ckpt.status().message();
  expectSameAsTorch(ckpt.value(), expected("ours.pt"));
  EXPECT_TRUE(ckpt->manifest().has_value());
  EXPECT_TRUE(ckpt->warnings().empty());
  const auto& t = ckpt->tensors();
  EXPECT_EQ(t[*ckpt->find("lang_encoder.embed_tokens.weight")].trainable, std::optional<bool>(false));
  EXPECT_EQ(t[*ckpt->find("lang_encoder.layers.0.mlp.fc1.weight")].trainable, std::optional<bool>(true));
  EXPECT_EQ(t[*ckpt->find("vision_encoder.position_ids")].trainable, std::optional<bool>(false));  // a buffer
  EXPECT_EQ(t[*ckpt->find("lang_encoder.layers.0.mlp.fc1.bias")].manifestHash, "xxh64:0123456789abcdef");
  EXPECT_TRUE(t[*ckpt->find("lang_encoder.layers.0.mlp.fc1.weight")].manifestHash.empty());
}

TEST_F(CheckpointIndexTest, ShardedMembersAreGatheredAcrossRankFiles) {
  auto ckpt = CheckpointIndex::open(path("sharded"));
  ASSERT_TRUE(ckpt.isOk()) << ckpt.status().message();
  EXPECT_EQ(ckpt->format(), CheckpointFormat::kFlamingoStudioSharded);
  EXPECT_EQ(ckpt->files().size(), 3u);  // index.json and two rank files
  EXPECT_EQ(ckpt->root(), nullptr);
  for (const auto& w : expected("sharded").at("tensors")) {
    const Section section = w.at("section") == "model" ? Section::kModel : Section::kOptimizer;
    auto i = ckpt->find(w.at("name").get<std::string>(), section);
    ASSERT_TRUE(i.has_value()) << w.at("name");
    const TensorEntry& t = ckpt->tensors()[*i];
    EXPECT_EQ(t.shape, w.at("shape").get<std::vector<std::int64_t>>());
    auto data = ckpt->data(*i);
    ASSERT_TRUE(data.isOk()) << data.status().message();
    EXPECT_EQ(hexOf(data.value()), w.at("hex").get<std::string>()) << t.name;
  }
  const auto weight = *ckpt->find("fc.weight");  // elements 0..11: 8 in rank-0.pt, 4 in rank-1.pt
  EXPECT_EQ(ckpt->tensors()[weight].trainable, std::optional<bool>(true));
  EXPECT_FALSE(ckpt->data(weight)->owned.empty());  // gathered into a copy
  const auto bias = *ckpt->find("fc.bias");         // elements 12..14: all in rank-1.pt
  EXPECT_TRUE(ckpt->data(bias)->owned.empty());     // a view into the mapping
  EXPECT_EQ(ckpt->files()[ckpt->tensors()[bias].file], path("sharded") + "/rank-1.pt");
  EXPECT_EQ(ckpt->tensors()[*ckpt->find("pos")].trainable, std::optional<bool>(false));
}

TEST_F(CheckpointIndexTest, SafetensorsSingleAndIndexed) {
  const std::vector<float> a = {1, 2, 3, 4, 5, 6};
  const std::vector<float> b = {7, 8};
  auto span = [](const std::vector<float>& v) {
    return std::span<const std::byte>(reinterpret_cast<const std::byte*>(v.data()), v.size() * sizeof(float));
  };
  const std::string one = path("one.safetensors");
  ASSERT_TRUE(tf::writeSafetensors(one, {{"x.a", tf::DType::kFloat32, {2, 3}, span(a)},
                                         {"x.b", tf::DType::kFloat32, {2}, span(b)}})
                  .isOk());
  auto single = CheckpointIndex::open(one);
  ASSERT_TRUE(single.isOk()) << single.status().message();
  EXPECT_EQ(single->format(), CheckpointFormat::kSafetensors);
  ASSERT_EQ(single->tensors().size(), 2u);
  EXPECT_EQ(single->tensors()[*single->find("x.a")].bytes, 24u);

  const std::string second = path("two.safetensors");
  ASSERT_TRUE(tf::writeSafetensors(second, {{"y.c", tf::DType::kFloat32, {2}, span(b)}}).isOk());
  const std::string index = path("model.safetensors.index.json");
  std::ofstream(index) << R"({"metadata": {"total_size": 40}, "weight_map": {"x.a": "one.safetensors",
      "x.b": "one.safetensors", "y.c": "two.safetensors"}})";
  auto indexed = CheckpointIndex::open(index);
  ASSERT_TRUE(indexed.isOk()) << indexed.status().message();
  EXPECT_EQ(indexed->format(), CheckpointFormat::kShardedWeights);
  ASSERT_EQ(indexed->tensors().size(), 3u);
  const TensorEntry& c = indexed->tensors()[*indexed->find("y.c")];
  EXPECT_EQ(indexed->files()[c.file], second);
  auto data = indexed->data(*indexed->find("y.c"));
  ASSERT_TRUE(data.isOk());
  EXPECT_EQ(hexOf(data.value()),
            "0000e0400000"
            "0041");
}

TEST_F(CheckpointIndexTest, ModuleTreeCountsEveryLevelWithTiedWeightsOnce) {
  auto ckpt = CheckpointIndex::open(path("openflamingo.pt"));
  ASSERT_TRUE(ckpt.isOk());
  const ModuleTree tree = buildModuleTree(ckpt.value());
  const ModuleNode& root = tree.root();
  EXPECT_EQ(root.tensors, 8u);  // nine names, the LM head tied to the embedding
  EXPECT_EQ(root.tied, 1u);
  std::uint64_t bytes = 0;
  for (const auto& t : ckpt->tensors())
    if (t.section == Section::kModel && !t.sameAs) bytes += t.bytes;
  EXPECT_EQ(root.bytes, bytes);
  const ModuleNode* lang = tree.find("lang_encoder");
  ASSERT_NE(lang, nullptr);
  EXPECT_EQ(lang->tensors, 4u);
  EXPECT_EQ(lang->bytes, (6u * 4 + 3 * 4 + 3 + 4 * 3) * 4);
  const ModuleNode* layer0 = tree.find("lang_encoder.layers.0");
  ASSERT_NE(layer0, nullptr);
  ASSERT_EQ(layer0->children.size(), 1u);
  EXPECT_EQ(tree.nodes[layer0->children[0]].name, "mlp");
  const ModuleNode* head = tree.find("lang_encoder.lm_head.weight");
  ASSERT_NE(head, nullptr);
  ASSERT_TRUE(head->tensor.has_value());
  EXPECT_EQ(head->bytes, 0u);  // counted at the embedding
  EXPECT_EQ(head->tied, 1u);
  const ModuleTree opt = buildModuleTree(ckpt.value(), Section::kOptimizer);
  EXPECT_EQ(opt.root().tensors, 6u);

  auto ours = CheckpointIndex::open(path("ours.pt"));
  ASSERT_TRUE(ours.isOk());
  const ModuleTree t2 = buildModuleTree(ours.value());
  EXPECT_EQ(t2.root().trainableBytes, (3u * 4 + 3) * 4);
  EXPECT_EQ(t2.root().frozenBytes, 6u * 4 * 4 + 5 * 8);
}

TEST_F(CheckpointIndexTest, DamagedInputsNameTheFile) {
  auto missing = CheckpointIndex::open(path("nope.pt"));
  ASSERT_FALSE(missing.isOk());
  EXPECT_NE(missing.status().message().find("nope.pt"), std::string::npos);

  // A truncated torch.save file.
  const std::string cut = path("cut.pt");
  std::filesystem::copy_file(path("openflamingo.pt"), cut, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(cut, std::filesystem::file_size(cut) / 2);
  auto torn = CheckpointIndex::open(cut);
  ASSERT_FALSE(torn.isOk());
  EXPECT_NE(torn.status().message().find("cut.pt"), std::string::npos) << torn.status().message();

  // A sharded index naming a file outside its directory.
  const std::string bad = path("bad-sharded");
  std::filesystem::create_directories(bad);
  std::ifstream in(path("sharded/index.json"));
  nlohmann::json index = nlohmann::json::parse(in);
  index["files"] = {"../ours.pt", "rank-1.pt"};
  std::ofstream(bad + "/index.json") << index.dump();
  auto escaped = CheckpointIndex::open(bad);
  ASSERT_FALSE(escaped.isOk());
  EXPECT_NE(escaped.status().message().find("../ours.pt"), std::string::npos) << escaped.status().message();

  // A member reaching past its flat buffer.
  for (const char* rank : {"rank-0.pt", "rank-1.pt"})
    std::filesystem::copy_file(path("sharded") + "/" + rank, bad + "/" + rank,
                               std::filesystem::copy_options::overwrite_existing);
  index["files"] = {"rank-0.pt", "rank-1.pt"};
  index["units"][0]["flats"][0]["members"][1]["numel"] = 30;
  std::ofstream(bad + "/index.json") << index.dump();
  auto outside = CheckpointIndex::open(bad);
  ASSERT_FALSE(outside.isOk());
  EXPECT_NE(outside.status().message().find("fc.bias"), std::string::npos) << outside.status().message();
}

TEST_F(CheckpointIndexTest, DiffMeasuresWhatChangedAsTorchDoes) {
  auto a = CheckpointIndex::open(path("diff_a.pt"));
  auto b = CheckpointIndex::open(path("diff_b.pt"));
  ASSERT_TRUE(a.isOk() && b.isOk());
  std::uint64_t lastDone = 0, total = 0;
  DiffOptions options;
  options.progress = [&](std::uint64_t done, std::uint64_t all) {
    EXPECT_GE(done, lastDone);
    lastDone = done;
    total = all;
  };
  auto report = diffCheckpoints(a.value(), b.value(), options);
  ASSERT_TRUE(report.isOk()) << report.status().message();
  EXPECT_EQ(lastDone, total);
  EXPECT_EQ(report->changed, 3u);
  EXPECT_EQ(report->unchanged, 1u);
  EXPECT_EQ(report->added, 1u);
  EXPECT_EQ(report->removed, 1u);
  EXPECT_EQ(report->misShaped, 1u);
  std::map<std::string, const TensorDiff*> by;
  for (const auto& d : report->tensors) by[d.name] = &d;
  const auto& want = expected("diff");
  for (const char* name : {"emb", "w", "h", "same"}) {
    SCOPED_TRACE(name);
    const TensorDiff& d = *by.at(name);
    const auto& w = want.at(name);
    EXPECT_DOUBLE_EQ(d.maxAbsChange, w.at("max_abs").get<double>());
    EXPECT_NEAR(d.relativeChange, w.at("relative").get<double>(), 1e-12);
    EXPECT_NEAR(d.cosine, w.at("cosine").get<double>(), 1e-12);
    EXPECT_EQ(d.changedElements, w.at("changed").get<std::int64_t>());
    if (w.contains("rows")) {
      EXPECT_EQ(d.changedRows, w.at("rows").get<std::vector<std::int64_t>>());
      EXPECT_EQ(d.changedRowCount, static_cast<std::int64_t>(d.changedRows.size()));
    }
  }
  EXPECT_EQ(by.at("gone")->kind, DiffKind::kRemoved);
  EXPECT_EQ(by.at("new")->kind, DiffKind::kAdded);
  EXPECT_EQ(by.at("shape")->kind, DiffKind::kMisShaped);
  EXPECT_EQ(by.at("shape")->shapeB, (std::vector<std::int64_t>{3, 2}));
  // Sorted: changed by relative change first (h 0.50, emb 0.32, w 0.011), then the rest.
  ASSERT_GE(report->tensors.size(), 3u);
  EXPECT_EQ(report->tensors[0].name, "h");
  EXPECT_EQ(report->tensors[1].name, "emb");
  EXPECT_EQ(report->tensors[2].name, "w");
  EXPECT_EQ(report->tensors.back().name, "same");

  std::atomic<bool> cancel{true};
  DiffOptions cancelled;
  cancelled.cancel = &cancel;
  auto stopped = diffCheckpoints(a.value(), b.value(), cancelled);
  ASSERT_FALSE(stopped.isOk());
  EXPECT_EQ(stopped.status().code(), protocol::Status::Code::kCancelled);
}

}  // namespace
}  // namespace fs::inspect
