// Pretrained weights and OpenFlamingo checkpoints written by Python
// (make_weight_fixtures.py with the project's Python environment (FS_PYTHON)) into the model and
// into a training run.
#include "backend/checkpoint/weights.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "backend/checkpoint/checkpoint_io.h"
#include "backend/checkpoint/checkpoint_sharded_index.h"
#include "backend/protocol/config/config_override.h"
#include "backend/protocol/config/config_yaml.h"
#include "backend/protocol/wire/event_codec.h"
#include "backend/step/optimizer.h"
#include "backend/step/seeding.h"
#include "backend/telemetry/stop_signals.h"
#include "backend/tensorfile/dtype.h"
#include "backend/trainer/trainer.h"
#include "tests/backend/trainer/engine_test_util.h"

namespace fs::checkpoint {
namespace {

namespace fsys = std::filesystem;

protocol::RunConfig tiny(const std::vector<std::string>& sets = {}) {
  return trainer::test::tinyConfig(sets);
}

model::Flamingo buildTiny(const protocol::RunConfig& config) {
  step::seedForModelInit(config);
  model::Flamingo m(model::FlamingoOptions::fromConfig(config.model));
  m->freezeAsOpenFlamingo();
  return m;
}

// The fixture script's value(k, shape).
torch::Tensor value(size_t k, const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return (torch::arange(n, torch::kDouble) * 1e-3 + 0.01 * static_cast<double>(k + 1))
      .to(torch::kFloat)
      .reshape(shape);
}

bool startsWith(const std::string& s, const std::string& p) {
  return s.rfind(p, 0) == 0;
}

// Our LM parameter name -> its HF name.
std::string hfName(const std::string& ours) {
  std::string hf = ours.substr(std::string("lang_encoder.").size());
  const std::string slot = ".decoder_layer.";
  if (auto p = hf.find(slot); p != std::string::npos) hf = hf.substr(0, p) + "." + hf.substr(p + slot.size());
  return hf;
}

class WeightsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fsys::path(fsys::temp_directory_path() / ("fs_weights_" + std::to_string(::getpid())));
    fsys::remove_all(*dir_);
    fsys::create_directories(*dir_);
    // The spec: vision tower names, checkpoint names (OpenFlamingo's filter), optimizer groups.
    auto m = buildTiny(tiny());
    nlohmann::json spec;
    spec["vision"] = nlohmann::json::object();
    spec["checkpoint"] = nlohmann::json::object();
    std::vector<step::NamedParameter> trainable;
    for (const auto& [name, t] : m->namedParameters()) {
      if (startsWith(name, "vision_encoder.")) spec["vision"][name.substr(15)] = t.sizes().vec();
      if (t.requires_grad() || name.find("embed") != std::string::npos)
        spec["checkpoint"][name] = t.sizes().vec();
      if (t.requires_grad()) trainable.push_back({name, t});
    }
    spec["groups"] = nlohmann::json::array();
    for (const auto& g : step::groupParameters(trainable, 0.1)) {
      nlohmann::json shapes = nlohmann::json::array();
      for (const auto& p : g.params) shapes.push_back(p.sizes().vec());
      spec["groups"].push_back(shapes);
    }
    std::ofstream(*dir_ / "spec.json") << spec.dump();
    const std::string cmd = std::string(FS_PYTHON) + " " + FS_SOURCE_DIR +
                            "/tests/backend/checkpoint/make_weight_fixtures.py '" +
                            (*dir_ / "spec.json").string() + "' '" + dir_->string() + "' 2>&1";
    scriptStatus_ = std::system(cmd.c_str());
  }
  static void TearDownTestSuite() {
    fsys::remove_all(*dir_);
    delete dir_;
  }
  void SetUp() override {
    ASSERT_EQ(scriptStatus_, 0) << "make_weight_fixtures.py failed";
    telemetry::clearStopRequests();
  }

  // Loads lm.path = dir into a fresh tiny model and checks every LM weight
  // against the script's values; the two new embedding rows keep their init.
  void expectLmLoaded(const std::string& sub) {
    auto config = tiny({"model.lm.path=" + (*dir_ / sub).string()});
    auto m = buildTiny(tiny());
    const torch::Tensor initEmbedding = m->inputEmbedding()->weight.detach().clone();
    auto loaded = loadPretrained(*m, config.model);
    ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
    EXPECT_TRUE(loaded->warnings.empty()) << loaded->warnings.front();
    std::map<std::string, std::vector<int64_t>> hf;  // HF name -> HF shape
    for (const auto& [name, t] : m->namedParameters()) {
      if (!startsWith(name, "lang_encoder.") || name.find(".gated_cross_attn_layer.") != std::string::npos)
        continue;
      auto shape = t.sizes().vec();
      if (name.find("embed_tokens") != std::string::npos)
        shape[0] = 128;  // HF vocab, before the special tokens
      hf[hfName(name)] = shape;
    }
    ASSERT_EQ(hf.size(), 36u);  // 4 + 2 layers x 16
    size_t k = 0;
    std::map<std::string, torch::Tensor> expected;
    for (const auto& [name, shape] : hf) expected[name] = value(k++, shape);
    int checked = 0;
    for (const auto& [name, t] : m->namedParameters()) {
      if (!startsWith(name, "lang_encoder.") || name.find(".gated_cross_attn_layer.") != std::string::npos)
        continue;
      const auto& want = expected.at(hfName(name));
      if (name.find("embed_tokens") != std::string::npos) {
        EXPECT_TRUE(torch::equal(t.narrow(0, 0, 128), want)) << name;
        EXPECT_TRUE(torch::equal(t.narrow(0, 128, 2), initEmbedding.narrow(0, 128, 2)))
            << "new rows keep their init";
      } else {
        EXPECT_TRUE(torch::equal(t, want)) << name << " (" << sub << ")";
      }
      ++checked;
    }
    EXPECT_EQ(checked, 36);
  }

  static fsys::path* dir_;
  static int scriptStatus_;
};
fsys::path* WeightsTest::dir_ = nullptr;
int WeightsTest::scriptStatus_ = -1;

// The torch-free table of dtype names (tensorfile/dtype.h) against LibTorch itself: its c10 column is
// what c10::toString writes into a sharded index, and the index's reader maps every name back.
TEST(DtypeNames, TheC10ColumnIsLibTorchsSpelling) {
  namespace tf = tensorfile;
  int checked = 0;
  for (int i = 0; i <= static_cast<int>(tf::DType::kFloat8E5M2); ++i) {
    const auto dtype = static_cast<tf::DType>(i);
    auto type = torchDtype(dtype);
    ASSERT_TRUE(type.isOk()) << tf::torchName(dtype) << ": " << type.status().message();
    EXPECT_EQ(tf::c10Name(dtype), c10::toString(type.value())) << tf::torchName(dtype);
    EXPECT_EQ(tf::dtypeFromC10Name(c10::toString(type.value())), dtype) << tf::torchName(dtype);
    auto back = dtypeFromName(std::string(tf::c10Name(dtype)));
    ASSERT_TRUE(back.isOk()) << back.status().message();
    EXPECT_EQ(back.value(), type.value());
    ++checked;
  }
  EXPECT_EQ(checked, 17);
  auto unknown = dtypeFromName("Float32");
  ASSERT_FALSE(unknown.isOk());
  EXPECT_NE(unknown.status().message().find("'Float32'"), std::string::npos) << unknown.status().message();
}

TEST_F(WeightsTest, HfTorchSaveDirectoryLoadsExactValues) {
  expectLmLoaded("lm_bin");
}
TEST_F(WeightsTest, HfSafetensorsLoadsExactValues) {
  expectLmLoaded("lm_st");
}
TEST_F(WeightsTest, HfBaseModelNamesWithoutPrefixLoad) {
  expectLmLoaded("lm_base");
}
TEST_F(WeightsTest, HfShardedIndexLoads) {
  expectLmLoaded("lm_sharded");
}

TEST_F(WeightsTest, NonContiguousAndSharedTensorsConvert) {
  auto sd = loadStateDictFile((*dir_ / "lm_bin" / "pytorch_model.bin").string());
  ASSERT_TRUE(sd.isOk()) << sd.status().message();
  const auto& emb = sd->at("model.decoder.embed_tokens.weight");
  EXPECT_TRUE(torch::equal(sd->at("lm_head.weight"), emb));
  const auto& fc1 = sd->at("model.decoder.layers.0.fc1.weight");
  EXPECT_TRUE(fc1.is_contiguous());
  EXPECT_EQ(fc1.sizes().vec(), (std::vector<int64_t>{64, 32}));
  EXPECT_FLOAT_EQ(fc1[0][1].item<float>(), fc1[0][0].item<float>() + 1e-3f);
}

TEST_F(WeightsTest, WrongShapeNamesTheKeyAndBothShapes) {
  auto m = buildTiny(tiny());
  auto loaded = loadPretrained(*m, tiny({"model.lm.path=" + (*dir_ / "lm_wrong").string()}).model);
  ASSERT_FALSE(loaded.isOk());
  const std::string msg = loaded.status().message();
  EXPECT_NE(msg.find("model.lm.path"), std::string::npos) << msg;
  EXPECT_NE(msg.find("layers.0.decoder_layer.fc1.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("48"), std::string::npos) << msg;
  EXPECT_NE(msg.find("64"), std::string::npos) << msg;
}

TEST_F(WeightsTest, HuggingFaceIdIsNotDownloaded) {
  auto m = buildTiny(tiny());
  auto loaded = loadPretrained(*m, tiny({"model.lm.path=facebook/opt-1.3b"}).model);
  ASSERT_FALSE(loaded.isOk());
  EXPECT_NE(loaded.status().message().find("model.lm.path 'facebook/opt-1.3b': not a local directory; "
                                           "Flamingo Studio does not download weights"),
            std::string::npos)
      << loaded.status().message();
  EXPECT_NE(loaded.status().message().find("huggingface-cli download"), std::string::npos);
  auto vision = loadPretrained(*m, tiny({"model.vision.pretrained=openai"}).model);
  ASSERT_FALSE(vision.isOk());
  EXPECT_NE(vision.status().message().find("model.vision.pretrained 'openai': not a local file"),
            std::string::npos)
      << vision.status().message();
  // OpenFlamingo trains on OpenAI's CLIP, not LAION's: the hint names it.
  EXPECT_NE(vision.status().message().find("OpenAI's CLIP weights"), std::string::npos)
      << vision.status().message();
  EXPECT_NE(vision.status().message().find("pretrained='openai'"), std::string::npos)
      << vision.status().message();
  EXPECT_EQ(vision.status().message().find("laion"), std::string::npos) << vision.status().message();
}

TEST_F(WeightsTest, OpenClipCheckpointLoadsTheVisionTower) {
  auto m = buildTiny(tiny());
  auto loaded =
      loadPretrained(*m, tiny({"model.vision.pretrained=" + (*dir_ / "open_clip.bin").string()}).model);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
  std::map<std::string, torch::Tensor> vision;
  for (const auto& [name, t] : m->namedParameters()) {
    if (startsWith(name, "vision_encoder.")) vision["visual." + name.substr(15)] = t;
  }
  ASSERT_FALSE(vision.empty());
  size_t k = 0;
  for (const auto& [name, t] : vision) EXPECT_TRUE(torch::equal(t, value(k++, t.sizes().vec()))) << name;
}

TEST_F(WeightsTest, ReleasedBareStateDictReads) {
  auto ck = readForeignCheckpoint((*dir_ / "released.pt").string());
  ASSERT_TRUE(ck.isOk()) << ck.status().message();
  EXPECT_FALSE(ck->epoch.has_value());
  EXPECT_FALSE(ck->optimizer.has_value());
  auto m = buildTiny(tiny());
  const auto report = m->loadStateDict(ck->model);
  EXPECT_TRUE(report.unexpected.empty() && report.mismatched.empty()) << report.summary();
  for (const auto& [name, t] : m->namedParameters()) {
    if (t.requires_grad()) {
      EXPECT_TRUE(ck->model.count(name)) << name;
    }
  }
}

std::vector<protocol::Event> readEvents(const fsys::path& dir) {
  std::ifstream in(dir / "events.jsonl", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  protocol::EventDecoder decoder;
  std::vector<protocol::Event> out;
  for (const auto& line : decoder.feed(ss.str())) {
    if (line.kind == protocol::DecodedLine::Kind::kEvent) out.push_back(line.event);
  }
  return out;
}

// Resumes a tiny run (2 epochs) from a Python-written checkpoint of epoch 0:
// lr is 0 in it, so after epoch 1 the weights are still the file's.
TEST_F(WeightsTest, ResumesFromAnOpenFlamingoCheckpointAtTheNextEpoch) {
  const auto run = *dir_ / "run_resume";
  trainer::TrainerOptions options;
  options.installSignalHandlers = false;
  auto outcome = trainer::runTraining(
      tiny({"optim.epochs=2", "checkpoint.resume_from=" + (*dir_ / "openflamingo.pt").string()}), run,
      options);
  ASSERT_TRUE(outcome.isOk()) << outcome.status().message();
  std::set<std::string> warnings;
  std::set<int> epochs;
  int64_t firstStep = -1;
  for (const auto& e : readEvents(run)) {
    if (const auto* w = std::get_if<protocol::WarningEvent>(&e.body)) {
      warnings.insert(w->code);
      if (w->code == "openflamingo_resume") {
        EXPECT_NE(w->message.find("data position and RNG state are not in it"), std::string::npos);
      }
    }
    if (const auto* s = std::get_if<protocol::StepEvent>(&e.body)) {
      epochs.insert(s->epoch);
      if (firstStep < 0) firstStep = s->step;
    }
  }
  EXPECT_TRUE(warnings.count("openflamingo_resume"));
  EXPECT_FALSE(warnings.count("openflamingo_optimizer_state")) << "the optimizer state fits";
  EXPECT_EQ(epochs, (std::set<int>{1}));
  EXPECT_EQ(firstStep, 4);  // the scheduler's last_epoch 3, plus one
  // The epoch-1 checkpoint holds the file's weights (lr 0 throughout).
  auto ck = readCheckpoint(run / "checkpoint_1.pt");
  ASSERT_TRUE(ck.isOk()) << ck.status().message();
  EXPECT_EQ(ck->epoch, 1);
  auto m = buildTiny(tiny());
  std::map<std::string, std::vector<int64_t>> names;
  for (const auto& [name, t] : m->namedParameters()) {
    if (t.requires_grad() || name.find("embed") != std::string::npos) names[name] = t.sizes().vec();
  }
  std::map<std::string, torch::Tensor> expected;
  size_t k = 0;
  for (const auto& [name, shape] : names) expected[name] = value(k++, shape);
  int perceiver = 0;
  for (const auto& [name, t] : ck->modelState) {
    if (!startsWith(name, "perceiver.") && name.find("attn_gate") == std::string::npos) continue;
    EXPECT_TRUE(torch::equal(t, expected.at(name))) << name;
    ++perceiver;
  }
  EXPECT_GT(perceiver, 2);
}

TEST_F(WeightsTest, IncompatibleOptimizerStateWarnsAndStartsFresh) {
  const auto run = *dir_ / "run_badopt";
  trainer::TrainerOptions options;
  options.installSignalHandlers = false;
  auto outcome = trainer::runTraining(
      tiny({"optim.epochs=1", "checkpoint.resume_from=" + (*dir_ / "openflamingo_badopt.pt").string()}), run,
      options);
  ASSERT_TRUE(outcome.isOk()) << outcome.status().message();
  std::set<std::string> warnings;
  int steps = 0;
  for (const auto& e : readEvents(run)) {
    if (const auto* w = std::get_if<protocol::WarningEvent>(&e.body)) warnings.insert(w->code);
    if (std::holds_alternative<protocol::StepEvent>(e.body)) ++steps;
  }
  EXPECT_TRUE(warnings.count("openflamingo_optimizer_state"));
  EXPECT_TRUE(warnings.count("openflamingo_resume"));
  EXPECT_EQ(steps, 0) << "epoch 0 + 1 == epochs: nothing left to train";
}

TEST_F(WeightsTest, HuggingFaceIdFailsTheRunClearly) {
  trainer::TrainerOptions options;
  options.installSignalHandlers = false;
  auto bad = trainer::runTraining(tiny({"optim.epochs=1", "model.lm.path=facebook/opt-1.3b"}),
                                  *dir_ / "run_bad", options);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("does not download weights"), std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace fs::checkpoint
