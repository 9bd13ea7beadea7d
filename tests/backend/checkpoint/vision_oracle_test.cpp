// The vision tower against open_clip's own (vision_oracle.py with FS_PYTHON):
// open_clip's CLIP built from a small config with QuickGELU (OpenAI's CLIP)
// and with erf GELU (LAION's), open_clip's VisionTransformer alone (patch 14),
// and OpenAI's released layout as open_clip's build_model_from_openai_state_dict
// reads it (fp16 where OpenAI's release is) write their state dicts;
// loadPretrained (model.vision.pretrained) loads each into our tower, and our
// patch tokens and pooled output equal open_clip's VisionTransformer's to
// 1e-5 relative, fp32, with ln_post_on_tokens off (open_clip 2.20, what
// OpenFlamingo reads) and on (ln_post of those tokens, open_clip >= 2.23).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "backend/checkpoint/weights.h"
#include "backend/model/flamingo.h"
#include "tests/backend/model/tiny_model.h"

namespace fs::checkpoint {
namespace {

namespace fsys = std::filesystem;

struct Case {
  std::string name;
  std::string kind;  // vision_oracle.py: clip, tower, openai
  bool quick_gelu;
  uint64_t seed;
  int64_t image = 32, patch = 8, width = 64, heads = 4, output = 48;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {{"openai_quick_gelu", "clip", true, 11},
                                      {"laion_gelu", "clip", false, 12},
                                      {"tower_patch14", "tower", true, 13, 56, 14},
                                      // build_model_from_openai_state_dict infers heads = width / 64.
                                      {"openai_release", "openai", true, 14, 42, 14, 128, 2, 32}};
  return c;
}

constexpr int64_t kLayers = 2, kImages = 3;

fsys::path root() {
  return fsys::path(FS_BINARY_DIR) / "tests" / "vision_oracle";
}

protocol::ModelConfig config(const Case& c) {
  auto m = model::testing::tinyConfig("opt");
  m.vision.path = "vision-oracle";
  m.vision.image_size = c.image;
  m.vision.patch_size = c.patch;
  m.vision.width = c.width;
  m.vision.layers = kLayers;
  m.vision.heads = c.heads;
  m.vision.output_dim = c.output;
  m.vision.quick_gelu = c.quick_gelu;
  m.vision.ln_post_on_tokens = false;  // open_clip 2.20, OpenFlamingo's
  m.vision.pretrained = (root() / c.name / "weights.pt").string();
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
  ASSERT_TRUE(ours.defined()) << what;
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
          << "{\"kind\": \"" << c.kind << "\", \"image_size\": " << c.image << ", \"patch_size\": " << c.patch
          << ", \"width\": " << c.width << ", \"layers\": " << kLayers << ", \"heads\": " << c.heads
          << ", \"output_dim\": " << c.output << ", \"quick_gelu\": " << (c.quick_gelu ? "true" : "false")
          << ", \"images\": " << kImages << ", \"seed\": " << c.seed << "}";
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

// Our tower loaded from `cfg` through loadPretrained, then both outputs on the case's images.
model::VisionEncoderImpl::Outputs encodeWith(const Case& c, const protocol::ModelConfig& cfg) {
  model::Flamingo m(model::FlamingoOptions::fromConfig(cfg));
  auto loaded = loadPretrained(*m, cfg);
  EXPECT_TRUE(loaded.isOk()) << loaded.status().message();
  if (!loaded.isOk()) return {};
  // Every tensor of our tower came from the file; the text tower and OpenAI's three integer
  // entries are a CLIP checkpoint's own, left alone without a warning.
  size_t tower = 0;
  for (const auto& [name, t] : m->namedParameters()) tower += name.rfind("vision_encoder.", 0) == 0;
  EXPECT_EQ(loaded->info.size(), 1u);
  if (!loaded->info.empty()) {
    EXPECT_EQ(loaded->info[0].rfind("vision tower: " + std::to_string(tower) + " tensors loaded", 0), 0u)
        << loaded->info[0];
  }
  EXPECT_TRUE(loaded->warnings.empty()) << loaded->warnings[0];
  const auto images = tensorIn(root() / c.name / "images.pt", "images");
  if (!images.defined()) return {};
  torch::NoGradGuard no_grad;
  auto out = m->visionEncoder()->encode(images);
  // forward() is encode()'s tokens: what the perceiver reads.
  EXPECT_TRUE(torch::equal(m->visionEncoder()->forward(images), out.tokens));
  return out;
}

TEST_P(VisionOracle, StateDictLoadsAndTokensAndPooledMatchOpenClip) {
  ASSERT_EQ(status(), 0)
      << "vision_oracle.py failed (open-clip-torch in the project's Python environment?):\n"
      << oracleLog();
  const auto& c = GetParam();
  const auto expected = root() / c.name / "expected.pt";
  auto cfg = config(c);
  auto ours = encodeWith(c, cfg);
  expectClose(ours.tokens, tensorIn(expected, "tokens"), c.name + " tokens");
  expectClose(ours.pooled, tensorIn(expected, "pooled"), c.name + " pooled");
  if (c.kind == "clip") {
    // CLIP.state_dict() as open_clip saves it (no OpenAI integer entries) loads the same.
    cfg.vision.pretrained = (root() / c.name / "open_clip.pt").string();
    ours = encodeWith(c, cfg);
    expectClose(ours.tokens, tensorIn(expected, "tokens"), c.name + " open_clip.pt tokens");
    expectClose(ours.pooled, tensorIn(expected, "pooled"), c.name + " open_clip.pt pooled");
  }
}

TEST_P(VisionOracle, LnPostOnTokensIsLnPostOfOpenClipsTokens) {
  // ln_post_on_tokens: open_clip >= 2.23's tokens (its ln_post on 2.20's), the pooled output unchanged.
  ASSERT_EQ(status(), 0) << oracleLog();
  const auto& c = GetParam();
  const auto expected = root() / c.name / "expected.pt";
  auto cfg = config(c);
  cfg.vision.ln_post_on_tokens = true;
  const auto ours = encodeWith(c, cfg);
  expectClose(ours.tokens, tensorIn(expected, "tokens_ln_post"), c.name + " tokens through ln_post");
  expectClose(ours.pooled, tensorIn(expected, "pooled"), c.name + " pooled");
  const auto plain = tensorIn(expected, "tokens");
  EXPECT_GT((ours.tokens - plain).abs().max().item<double>(), 1e-3 * plain.abs().max().item<double>());
}

TEST_P(VisionOracle, TheOtherActivationDoesNotMatch) {
  // The comparison can fail: the same weights under the other GELU differ beyond the tolerance.
  ASSERT_EQ(status(), 0) << oracleLog();
  const auto& c = GetParam();
  auto cfg = config(c);
  cfg.vision.quick_gelu = !c.quick_gelu;
  const auto tokens = encodeWith(c, cfg).tokens;
  const auto theirs = tensorIn(root() / c.name / "expected.pt", "tokens");
  ASSERT_TRUE(tokens.defined());
  EXPECT_GT((tokens - theirs).abs().max().item<double>(), 1e-3 * theirs.abs().max().item<double>());
}

INSTANTIATE_TEST_SUITE_P(Towers, VisionOracle, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace fs::checkpoint
