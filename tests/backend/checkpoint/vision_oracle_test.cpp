// The vision tower against open_clip's own (vision_oracle.py with FS_PYTHON):
// open_clip's CLIP, built from a small config with QuickGELU (OpenAI's CLIP)
// and with erf GELU (LAION's), writes its state dict in OpenAI CLIP's layout;
// loadPretrained (model.vision.pretrained) loads it into our tower, and our
// patch tokens and pooled output equal open_clip's VisionTransformer's to
// 1e-5 relative, fp32.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "backend/checkpoint/weights.h"
#include "backend/model/flamingo.h"
#include "tests/backend/model/tiny_model.h"

namespace fs::engine {
namespace {

namespace fsys = std::filesystem;

struct Case {
  std::string name;
  bool quick_gelu;
  uint64_t seed;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {{"openai_quick_gelu", true, 11}, {"laion_gelu", false, 12}};
  return c;
}

constexpr int64_t kImage = 32, kPatch = 8, kWidth = 64, kLayers = 2, kHeads = 4, kOutput = 48, kImages = 3;

fsys::path root() {
  return fsys::path(FS_BINARY_DIR) / "tests" / "vision_oracle";
}

protocol::ModelConfig config(const Case& c) {
  auto m = model::testing::tinyConfig("opt");
  m.vision.path = "vision-oracle";
  m.vision.image_size = kImage;
  m.vision.patch_size = kPatch;
  m.vision.width = kWidth;
  m.vision.layers = kLayers;
  m.vision.heads = kHeads;
  m.vision.output_dim = kOutput;
  m.vision.quick_gelu = c.quick_gelu;
  m.vision.ln_post_on_tokens = false;  // open_clip 2.20, OpenFlamingo's
  m.vision.pretrained = (root() / c.name / "clip.pt").string();
  return m;
}

torch::Tensor tensorIn(const fsys::path& file, const std::string& name) {
  auto sd = loadStateDictFile(file.string());
  EXPECT_TRUE(sd.isOk()) << sd.status().message();
  if (!sd.isOk()) return {};
  auto it = sd->find(name);
  EXPECT_NE(it, sd->end()) << file << " has no '" << name << "'";
  return it == sd->end() ? torch::Tensor() : it->second;
}

void expectClose(const torch::Tensor& ours, const torch::Tensor& theirs, const std::string& what) {
  ASSERT_TRUE(theirs.defined()) << what;
  ASSERT_EQ(ours.sizes(), theirs.sizes()) << what;
  const double scale = theirs.abs().max().item<double>();
  const double diff = (ours - theirs).abs().max().item<double>();
  EXPECT_GT(scale, 0.0) << what;
  EXPECT_LE(diff, 1e-5 * scale) << what << ": max |ours - open_clip| = " << diff << " (max |value| " << scale
                                << ")";
}

class VisionOracle : public ::testing::TestWithParam<Case> {
 protected:
  static void SetUpTestSuite() {
    fsys::remove_all(root());
    for (const auto& c : cases()) {
      fsys::create_directories(root() / c.name);
      std::ofstream(root() / c.name / "config.json")
          << "{\"image_size\": " << kImage << ", \"patch_size\": " << kPatch << ", \"width\": " << kWidth
          << ", \"layers\": " << kLayers << ", \"heads\": " << kHeads << ", \"output_dim\": " << kOutput
          << ", \"quick_gelu\": " << (c.quick_gelu ? "true" : "false") << ", \"images\": " << kImages
          << ", \"seed\": " << c.seed << "}";
    }
    const auto log = root() / "oracle.log";
    const std::string cmd = std::string(FS_PYTHON) + " " + FS_SOURCE_DIR +
                            "/tests/backend/checkpoint/vision_oracle.py " + root().string() + " > " +
                            log.string() + " 2>&1";
    status() = std::system(cmd.c_str());
    std::ifstream in(log);
    oracleLog() = std::string(std::istreambuf_iterator<char>(in), {});
  }
  static int& status() {
    static int s = -1;
    return s;
  }
  static std::string& oracleLog() {
    static std::string s;
    return s;
  }
};

TEST_P(VisionOracle, OpenAiLayoutLoadsAndTokensAndPooledMatchOpenClip) {
  ASSERT_EQ(status(), 0)
      << "vision_oracle.py failed (open-clip-torch in the project's Python environment?):\n"
      << oracleLog();
  const auto& c = GetParam();
  const auto cfg = config(c);
  model::Flamingo m(model::FlamingoOptions::fromConfig(cfg));
  auto loaded = loadPretrained(*m, cfg);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
  // Every tensor of our tower came from visual.*; the text tower and OpenAI's three integer
  // entries are a CLIP checkpoint's own, left alone without a warning.
  size_t tower = 0;
  for (const auto& [name, t] : m->namedParameters()) tower += name.rfind("vision_encoder.", 0) == 0;
  ASSERT_EQ(loaded->info.size(), 1u);
  EXPECT_EQ(loaded->info[0].rfind("vision tower: " + std::to_string(tower) + " tensors loaded", 0), 0u)
      << loaded->info[0];
  EXPECT_TRUE(loaded->warnings.empty()) << loaded->warnings[0];

  const auto images = tensorIn(root() / c.name / "images.pt", "images");
  ASSERT_TRUE(images.defined());
  model::VisionEncoderImpl::Outputs ours;
  {
    torch::NoGradGuard no_grad;
    ours = m->visionEncoder()->encode(images);
  }
  const auto expected = root() / c.name / "expected.pt";
  expectClose(ours.tokens, tensorIn(expected, "tokens"), c.name + " tokens");
  expectClose(ours.pooled, tensorIn(expected, "pooled"), c.name + " pooled");
  // forward() is encode()'s tokens: what the perceiver reads.
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(m->visionEncoder()->forward(images), ours.tokens));
}

TEST_P(VisionOracle, TheOtherActivationDoesNotMatch) {
  // The comparison can fail: the same weights under the other GELU differ beyond the tolerance.
  ASSERT_EQ(status(), 0) << oracleLog();
  const auto& c = GetParam();
  auto cfg = config(c);
  cfg.vision.quick_gelu = !c.quick_gelu;
  model::Flamingo m(model::FlamingoOptions::fromConfig(cfg));
  ASSERT_TRUE(loadPretrained(*m, cfg).isOk());
  torch::NoGradGuard no_grad;
  const auto tokens = m->visionEncoder()->encode(tensorIn(root() / c.name / "images.pt", "images")).tokens;
  const auto theirs = tensorIn(root() / c.name / "expected.pt", "tokens");
  EXPECT_GT((tokens - theirs).abs().max().item<double>(), 1e-3 * theirs.abs().max().item<double>());
}

INSTANTIATE_TEST_SUITE_P(Towers, VisionOracle, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace fs::engine
