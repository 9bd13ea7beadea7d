// The planner's parameter inventory (built from the config alone) against
// the real LibTorch model: names and order, shapes, trainable flags after
// freezeAsOpenFlamingo(), tied groups, module paths and module types, for the
// tiny and small presets and every LM family. NOTE [Inventory contract].
// Also the activation estimate's padding rule against the model's.
#include "backend/fsdp_plan/param_inventory.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "backend/fsdp_plan/activation_estimate.h"
#include "backend/model/common.h"
#include "backend/model/flamingo.h"
#include "backend/protocol/config/config_yaml.h"

namespace fs::fsdp_plan {
namespace {

// Variants as tests/backend/model/tiny_model.h, plus each family with the other head.
struct Variant {
  std::string family;
  std::string path;
  bool tied;
  bool freezeEmbeddings;
};

std::vector<Variant> variants() {
  return {{"opt", "", true, false},      {"opt", "", false, false},
          {"mpt", "", true, false},      {"mpt", "anas-awadalla/mpt-1b-redpajama-200b", true, false},
          {"mpt", "", false, true},      {"gpt_neox", "", false, false},
          {"gpt_neox", "", true, false}, {"gpt_neox", "EleutherAI/pythia-160m", false, false},
          {"llama", "", false, false},   {"llama", "", true, true}};
}

protocol::ModelConfig modelConfig(const std::string& preset, const Variant& v) {
  auto load = protocol::loadConfigFile(std::string(FS_SOURCE_DIR) + "/resources/presets/" + preset + ".yaml");
  EXPECT_TRUE(load.ok()) << preset;
  auto c = load.config.model;
  c.lm.family = v.family;
  c.lm.path = v.path;
  c.lm.tied_head = v.tied;
  c.freeze_lm_embeddings = v.freezeEmbeddings;
  return c;
}

// The planner's type name for a real module, by its class.
std::string typeOf(torch::nn::Module& m) {
  if (m.as<model::FlamingoImpl>()) return "Flamingo";
  if (m.as<model::VisionEncoderImpl>()) return "VisionTransformer";
  if (m.as<model::ResidualAttentionBlockImpl>()) return "ResidualAttentionBlock";
  if (m.as<model::PerceiverResamplerImpl>()) return "PerceiverResampler";
  if (m.as<model::PerceiverLayerImpl>()) return "PerceiverLayer";
  if (m.as<model::GatedCrossAttentionBlockImpl>()) return "GatedCrossAttentionBlock";
  if (m.as<model::FlamingoLayerImpl>()) return "FlamingoLayer";
  if (m.as<model::CausalLmImpl>()) return "CausalLM";
  if (dynamic_cast<model::DecoderLayerImpl*>(&m)) return "DecoderLayer";
  if (m.as<torch::nn::EmbeddingImpl>()) return "Embedding";
  if (m.as<torch::nn::LinearImpl>()) return "Linear";
  if (m.as<torch::nn::ModuleListImpl>()) return "ModuleList";
  if (m.name() == "fs::model::Container") return "Container";
  return "";  // not checked (attention / MLP / norm classes differ per family)
}

void expectSameAsModel(const std::string& preset, const Variant& v) {
  SCOPED_TRACE(preset + " " + v.family + " " + v.path + (v.tied ? " tied" : " untied") +
               (v.freezeEmbeddings ? " frozen-embeddings" : ""));
  const auto config = modelConfig(preset, v);
  auto inv = buildParamInventory(config);
  ASSERT_TRUE(inv.isOk()) << inv.status().message();

  torch::manual_seed(0);
  model::Flamingo flamingo(model::FlamingoOptions::fromConfig(config));
  flamingo->freezeAsOpenFlamingo();
  const auto named = flamingo->namedParameters();

  ASSERT_EQ(inv->params.size(), named.size());
  for (size_t i = 0; i < named.size(); ++i) {
    const auto& [name, tensor] = named[i];
    const auto& p = inv->params[i];
    EXPECT_EQ(p.name, name) << "at " << i;
    EXPECT_EQ(p.shape, tensor.sizes().vec()) << name;
    EXPECT_EQ(p.numel, tensor.numel()) << name;
    EXPECT_EQ(p.trainable, tensor.requires_grad()) << name;
  }
  EXPECT_TRUE(inv->buffers.empty());
  EXPECT_EQ(flamingo->buffers().size(), 0u) << "the model grew buffers: decide how the planner counts them";

  // Tied groups: the head is the embedding's tensor, known under the head's name.
  const auto lm = flamingo->languageModel();
  const bool tied = flamingo->outputHeadWeight().is_same(flamingo->inputEmbedding()->weight);
  EXPECT_EQ(tied, lm->tiedHead());
  ASSERT_EQ(inv->tiedGroups.size(), tied ? 1u : 0u);
  if (tied) {
    EXPECT_EQ(inv->tiedGroups[0].param, "lang_encoder." + lm->inputEmbeddingPath() + ".weight");
    EXPECT_EQ(inv->tiedGroups[0].aliases,
              std::vector<std::string>{"lang_encoder." + lm->outputHeadPath() + ".weight"});
    EXPECT_EQ(inv->param(inv->tiedGroups[0].param)->tiedGroup, 0);
  }

  // Module paths and the types the wrap policies select by.
  std::map<std::string, std::string> real;
  for (const auto& item : flamingo->named_modules()) real[item.key()] = typeOf(*item.value());
  // The planner names the untied head (a Linear) by its role, so policies can pick it.
  if (!lm->tiedHead()) real["lang_encoder." + lm->outputHeadPath()] = "OutputHead";
  std::set<std::string> planned;
  for (const auto& m : inv->modules) {
    if (m.isVirtual) {
      EXPECT_EQ(real.count(m.path), 0u) << m.path;
      continue;
    }
    planned.insert(m.path);
    ASSERT_EQ(real.count(m.path), 1u) << "no module " << m.path;
    const auto& type = real[m.path];
    if (!type.empty()) {
      EXPECT_EQ(m.type, type) << m.path;
    }
    EXPECT_EQ(m.callable, type != "Container" && type != "ModuleList") << m.path;
  }
  for (const auto& [path, type] : real) EXPECT_EQ(planned.count(path), 1u) << "not planned: " << path;

  int64_t total = 0;
  for (const auto& t : flamingo->parameters()) total += t.numel();
  EXPECT_EQ(inv->numel(), total);
}

TEST(ParamInventory, MatchesTheTinyModelForEveryFamily) {
  for (const auto& v : variants()) expectSameAsModel("tiny", v);
}

TEST(ParamInventory, MatchesTheSmallModelForEveryFamily) {
  for (const auto& v : variants()) expectSameAsModel("small", v);
}

TEST(ParamInventory, NineBPresetCountsAsTheSpec) {
  auto load = protocol::loadConfigFile(std::string(FS_SOURCE_DIR) +
                                       "/resources/presets/openflamingo-9b-vitl-mpt7b.yaml");
  ASSERT_TRUE(load.ok());
  auto inv = buildParamInventory(load.config.model);
  ASSERT_TRUE(inv.isOk()) << inv.status().message();
  // Spec section 2: about 1.38B trainable of 8.13B.
  EXPECT_NEAR(static_cast<double>(inv->numel()) / 1e9, 8.13, 0.01);
  EXPECT_NEAR(static_cast<double>(inv->trainableNumel()) / 1e9, 1.38, 0.01);
  // Spec section 1: 8 d^2 + 1028 d + 1,048,578 per gated block (d_vis 1024).
  int64_t block = 0;
  for (const auto& p : inv->params) {
    if (p.block == "lang_encoder.transformer.blocks.3.gated_cross_attn_layer") block += p.numel;
  }
  const int64_t d = 4096;
  EXPECT_EQ(block, 8 * d * d + 1028 * d + 1048578);
}

TEST(ParamInventory, RejectsAnUnknownFamilyNamingTheField) {
  auto load = protocol::loadConfigFile(std::string(FS_SOURCE_DIR) + "/resources/presets/tiny.yaml");
  auto c = load.config.model;
  c.lm.family = "gptj";
  auto inv = buildParamInventory(c);
  ASSERT_FALSE(inv.isOk());
  EXPECT_NE(inv.status().message().find("model.lm.family"), std::string::npos);
  EXPECT_NE(inv.status().message().find("gptj"), std::string::npos);
}

// The planner's second path through the LM (NOTE [Activation formula]) starts where the model starts
// skipping padding: with paddedPositionsToSkip(width) positions padded, not one fewer.
TEST(ParamInventory, PaddingRuleIsTheModels) {
  constexpr int64_t kPad = 1;
  for (const int64_t width : {32, 256, 1000, 2048, 4096}) {
    const int64_t need = paddedPositionsToSkip(width);
    ASSERT_GE(need, 1) << width;
    const int64_t length = need + 1;  // one real token per row beside the padding
    auto ids = torch::full({1, length}, 5, torch::kLong);
    auto mask = torch::ones({1, length}, torch::kLong);
    auto padRight = [&](int64_t padded) {
      auto i = ids.clone(), m = mask.clone();
      i.narrow(1, length - padded, padded).fill_(kPad);
      m.narrow(1, length - padded, padded).zero_();
      return model::paddingFor(i, m, kPad, width);
    };
    EXPECT_EQ(padRight(need), model::Padding::kSkip) << "width " << width;
    if (need > 1) {
      EXPECT_EQ(padRight(need - 1), model::Padding::kCompute) << "width " << width;
    }
  }
}

}  // namespace
}  // namespace fs::fsdp_plan
