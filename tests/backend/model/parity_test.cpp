// Parity with PyTorch: our tiny model's weights and inputs go to Python
// (runtime::pickleForTorchLoad -> torch.load), an independent reference
// (flamingo_reference.py: open_clip's own VisionTransformer, plain torch after
// it) computes the logits, and ours must match within 1e-5 relative (fp32,
// dropout 0, non-zero gates so cross-attention counts).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "backend/runtime/torch_pickle.h"
#include "tiny_model.h"

namespace fs::model {
namespace {

namespace fsys = std::filesystem;

struct Case {
  std::string name;
  std::string variant;
  bool quick_gelu;
  bool ln_post_on_tokens;
};

const std::vector<Case>& cases() {
  // Only what OpenFlamingo's own code cannot build (flamingo_reference.py's header): OPT, GPT-NeoX
  // (pythia and RedPajama knobs) and LLaMA are openflamingo_parity_test's, against OpenFlamingo,
  // open_clip and transformers themselves.
  static const std::vector<Case> c = {
      {"mpt", "mpt", false, true},
      {"mpt_1b", "mpt-1b", true, false},
  };
  return c;
}

fsys::path root() {
  return fsys::path(FS_BINARY_DIR) / "tests" / "model_parity";
}

void writeBytes(const fsys::path& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string configJson(const FlamingoOptions& o, const Case& c, const std::vector<int64_t>& logits_shape) {
  const auto& lm = o.lm();
  std::ostringstream j;
  j.precision(17);
  auto b = [](bool v) { return v ? "true" : "false"; };
  j << "{\"family\": \"" << lm.family() << "\", \"variant\": \"" << c.variant << "\""
    << ", \"patch_size\": " << o.vision().patch_size() << ", \"vision_layers\": " << o.vision().layers()
    << ", \"vision_heads\": " << o.vision().heads() << ", \"quick_gelu\": " << b(o.vision().quick_gelu())
    << ", \"ln_post_on_tokens\": " << b(o.vision().ln_post_on_tokens())
    << ", \"perceiver_depth\": " << o.perceiver().depth()
    << ", \"perceiver_heads\": " << o.perceiver().heads()
    << ", \"perceiver_head_dim\": " << o.perceiver().head_dim()
    << ", \"xattn_heads\": " << o.cross_attn().heads()
    << ", \"xattn_head_dim\": " << o.cross_attn().head_dim()
    << ", \"every_n\": " << o.cross_attn_every_n_layers() << ", \"image_id\": " << o.image_id()
    << ", \"lm_layers\": " << lm.layers() << ", \"lm_heads\": " << lm.heads()
    << ", \"tied\": " << b(lm.tied_head()) << ", \"rotary_pct\": " << lm.rotary_pct()
    << ", \"rotary_base\": " << lm.rotary_base() << ", \"parallel_residual\": " << b(lm.parallel_residual())
    << ", \"qk_ln\": " << b(lm.qk_ln()) << ", \"mosaic_gpt_names\": " << b(lm.mosaic_gpt_names())
    << ", \"alibi_bias_max\": " << lm.alibi_bias_max()
    << ", \"norm_eps\": " << lm.normEpsOr(lm.family() == "llama" ? 1e-6 : 1e-5) << ", \"logits_shape\": ["
    << logits_shape[0] << ", " << logits_shape[1] << ", " << logits_shape[2] << "]}";
  return j.str();
}

class Parity : public ::testing::TestWithParam<Case> {
 protected:
  static void SetUpTestSuite() {
    fsys::remove_all(root());
    for (size_t i = 0; i < cases().size(); ++i) {
      const auto& c = cases()[i];
      auto config = testing::tinyConfig(c.variant);
      config.vision.quick_gelu = c.quick_gelu;
      config.vision.ln_post_on_tokens = c.ln_post_on_tokens;
      config.cross_attn.every_n_layers =
          (c.variant == "mpt-1b") ? 2 : 1;  // also an LM layer without a gated block
      auto options = FlamingoOptions::fromConfig(config);
      options.lm().noDropout();
      torch::manual_seed(100 + i);
      Flamingo model(options);
      {
        // Move every weight away from its init (norms away from 1 / 0, gates away from 0).
        torch::NoGradGuard no_grad;
        for (auto& p : model->parameters()) p.add_(torch::randn_like(p) * 0.05);
      }
      testing::setGates(model);
      const auto batch = testing::tinyBatch(options, 200 + i);
      torch::Tensor logits;
      {
        torch::NoGradGuard no_grad;
        logits = model->forward(batch.vision_x, batch.input_ids, batch.attention_mask);
      }
      ours()[c.name] = logits;
      const auto dir = root() / c.name;
      fsys::create_directories(dir);
      {  // ours too, for looking at a failure by hand
        const auto flat = logits.contiguous();
        std::ofstream out(dir / "ours.bin", std::ios::binary);
        out.write(reinterpret_cast<const char*>(flat.data_ptr<float>()),
                  static_cast<std::streamsize>(flat.numel() * sizeof(float)));
      }

      c10::Dict<std::string, torch::Tensor> weights;
      for (const auto& [name, t] : model->namedParameters()) weights.insert(name, t.detach().contiguous());
      writeBytes(dir / "weights.pt", fs::runtime::pickleForTorchLoad(weights));
      c10::Dict<std::string, torch::Tensor> inputs;
      inputs.insert("vision_x", batch.vision_x);
      inputs.insert("input_ids", batch.input_ids);
      inputs.insert("attention_mask", batch.attention_mask);
      writeBytes(dir / "inputs.pt", fs::runtime::pickleForTorchLoad(inputs));
      std::ofstream(dir / "config.json") << configJson(options, c, logits.sizes().vec());
    }
    const auto log = root() / "reference.log";
    const std::string cmd = std::string(FS_PYTHON) + " " + FS_SOURCE_DIR +
                            "/tests/backend/model/flamingo_reference.py " + root().string() + " > " +
                            log.string() + " 2>&1";
    python_status() = std::system(cmd.c_str());
    std::ifstream in(log);
    python_log() = std::string(std::istreambuf_iterator<char>(in), {});
  }

  static std::map<std::string, torch::Tensor>& ours() {
    static std::map<std::string, torch::Tensor> m;
    return m;
  }
  static int& python_status() {
    static int s = -1;
    return s;
  }
  static std::string& python_log() {
    static std::string s;
    return s;
  }
};

torch::Tensor readLogits(const fsys::path& path, const torch::Tensor& like) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "no reference logits at " << path;
  auto out = torch::empty(like.sizes(), torch::kFloat);
  in.read(reinterpret_cast<char*>(out.data_ptr<float>()),
          static_cast<std::streamsize>(out.numel() * sizeof(float)));
  EXPECT_EQ(in.gcount(), static_cast<std::streamsize>(out.numel() * sizeof(float))) << path;
  return out;
}

TEST_P(Parity, LogitsMatchThePyTorchReference) {
  ASSERT_EQ(python_status(), 0) << "the reference failed:\n" << python_log();
  const auto& c = GetParam();
  const auto& mine = ours().at(c.name);
  const auto ref = readLogits(root() / c.name / "logits.bin", mine);
  const double scale = ref.abs().max().item<double>();
  const double max_diff = (mine - ref).abs().max().item<double>();
  EXPECT_GT(scale, 0.0);
  EXPECT_LE(max_diff, 1e-5 * scale) << c.name << ": max |ours - reference| = " << max_diff << " (max |logit| "
                                    << scale << ")";
  EXPECT_TRUE(torch::allclose(mine, ref, 1e-5, 1e-5 * scale)) << c.name;
  std::ostringstream rel;
  rel << std::scientific << max_diff / scale;
  RecordProperty("max_relative_difference", rel.str());
}

INSTANTIATE_TEST_SUITE_P(Families, Parity, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace fs::model
