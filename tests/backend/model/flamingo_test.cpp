// Flamingo assembly: gates at 0 reproduce the bare LM for every family,
// placement, freezing, the embedding-gradient row mask, gate telemetry,
// determinism, resizing and the load report.
#include "backend/model/flamingo.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>

#include "backend/model/lm_factory.h"
#include "tiny_model.h"

namespace fs::model {
namespace {

using testing::buildTiny;
using testing::tinyBatch;
using testing::tinyOptions;

std::map<std::string, torch::Tensor> toMap(const NamedTensors& named) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& [name, t] : named) out.emplace(name, t.detach().clone());
  return out;
}

class PerFamily : public ::testing::TestWithParam<std::string> {};

TEST_P(PerFamily, GatesAtZeroGiveTheBareLanguageModelsLogits) {
  auto model = buildTiny(GetParam());
  const auto batch = tinyBatch(model->options());
  // A bare LM of the same family, its weights copied into the Flamingo (a
  // Hugging Face layout state dict: also exercises loadLanguageModelStateDict).
  torch::manual_seed(11);
  auto lm = makeCausalLm(model->options().lm());
  lm->resizeTokenEmbeddings(model->options().vocab_size());
  NamedTensors lm_named;
  for (const auto& item : lm->named_parameters()) lm_named.emplace_back(item.key(), item.value());
  const auto report = model->loadLanguageModelStateDict(toMap(lm_named));
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_EQ(report.loaded.size(), lm_named.size());

  const auto flamingo_logits = model->forward(batch.vision_x, batch.input_ids, batch.attention_mask);
  const auto bare_logits = lm->forward(batch.input_ids, batch.attention_mask);
  EXPECT_EQ(flamingo_logits.sizes(), torch::IntArrayRef({2, 12, 130}));
  EXPECT_TRUE(torch::equal(flamingo_logits, bare_logits));

  testing::setGates(model);
  EXPECT_FALSE(
      torch::allclose(model->forward(batch.vision_x, batch.input_ids, batch.attention_mask), bare_logits));
}

TEST_P(PerFamily, SameSeedSameWeights) {
  auto a = buildTiny(GetParam(), 5);
  auto b = buildTiny(GetParam(), 5);
  const auto pa = a->namedParameters();
  const auto pb = b->namedParameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_EQ(pa[i].first, pb[i].first);
    EXPECT_TRUE(torch::equal(pa[i].second, pb[i].second)) << pa[i].first;
  }
}

TEST_P(PerFamily, FreezingAsOpenFlamingo) {
  auto model = buildTiny(GetParam());
  model->freezeAsOpenFlamingo();
  const std::string embedding = "lang_encoder." + model->languageModel()->inputEmbeddingPath() + ".weight";
  for (const auto& [name, p] : model->namedParameters()) {
    const bool trainable = name.rfind("perceiver.", 0) == 0 ||
                           name.find(".gated_cross_attn_layer.") != std::string::npos || name == embedding;
    EXPECT_EQ(p.requires_grad(), trainable) << name;
  }
  // An untied head stays frozen.
  if (!model->languageModel()->tiedHead()) {
    EXPECT_FALSE(model->outputHeadWeight().requires_grad());
  }

  auto frozen_embeddings = tinyOptions(GetParam());
  frozen_embeddings.freeze_lm_embeddings(true);
  torch::manual_seed(0);
  Flamingo other(frozen_embeddings);
  other->freezeAsOpenFlamingo();
  EXPECT_FALSE(other->inputEmbedding()->weight.requires_grad());
  EXPECT_TRUE(other->perceiver()->latents.requires_grad());
}

TEST_P(PerFamily, EmbeddingGradientOnlyOnTheNewTokenRows) {
  auto model = buildTiny(GetParam());
  model->freezeAsOpenFlamingo();
  testing::setGates(model);
  const auto batch = tinyBatch(model->options());
  const auto logits = model->forward(batch.vision_x, batch.input_ids, batch.attention_mask);
  torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}), batch.input_ids.reshape({-1}))
      .backward();
  auto grad = model->inputEmbedding()->weight.grad();
  ASSERT_TRUE(grad.defined());
  const auto row_norms = [&] { return grad.abs().sum(1); };
  EXPECT_GT(row_norms()[5].item<double>(), 0.0);  // an ordinary text token had a gradient
  model->maskEmbeddingGradient();
  const auto norms = row_norms();
  const int64_t img = model->options().image_id();
  const int64_t eoc = model->options().endofchunk_id();
  EXPECT_GT(norms[img].item<double>(), 0.0);
  EXPECT_GT(norms[eoc].item<double>(), 0.0);
  EXPECT_EQ(torch::count_nonzero(norms).item<int64_t>(), 2);
  const auto mask = model->embeddingGradientRowMask();
  EXPECT_EQ(mask.sizes(), torch::IntArrayRef({130, 1}));
  EXPECT_EQ(mask.sum().item<double>(), 2.0);
}

INSTANTIATE_TEST_SUITE_P(Families, PerFamily, ::testing::ValuesIn(testing::variants()), [](const auto& info) {
  std::string name = info.param;
  for (auto& c : name) c = (c == '-') ? '_' : c;
  return name;
});

TEST(Flamingo, CrossAttentionPlacementEveryN) {
  auto config = testing::tinyConfig("llama");
  config.lm.layers = 4;
  config.cross_attn.every_n_layers = 2;
  torch::manual_seed(0);
  Flamingo model(FlamingoOptions::fromConfig(config));
  std::vector<bool> has;
  for (const auto& layer : model->flamingoLayers()) has.push_back(layer->hasCrossAttention());
  EXPECT_EQ(has, (std::vector<bool>{false, true, false, true}));
  EXPECT_EQ(model->gatedCrossAttentionBlocks().size(), 2u);
  EXPECT_EQ(model->languageModel()->decoderLayers().size(), 4u);

  testing::setGates(model);
  const auto gates = model->gateValues();
  ASSERT_EQ(gates.size(), 2u);
  EXPECT_EQ(gates[0].layer, 1);
  EXPECT_EQ(gates[1].layer, 3);
  EXPECT_NEAR(gates[0].attn, std::tanh(0.3), 1e-7);
  EXPECT_NEAR(gates[0].ff, std::tanh(-0.15), 1e-7);
  EXPECT_NEAR(gates[1].attn, std::tanh(0.7), 1e-7);
}

TEST(Flamingo, FreshGatesReadZero) {
  auto model = buildTiny("opt");
  for (const auto& g : model->gateValues()) {
    EXPECT_EQ(g.attn, 0.0);
    EXPECT_EQ(g.ff, 0.0);
  }
}

TEST(Flamingo, ResizeKeepsOldRowsAndInitialisesNewOnes) {
  auto options = tinyOptions("llama");
  torch::manual_seed(3);
  auto lm = makeCausalLm(options.lm());
  const auto before_embed = lm->inputEmbedding()->weight.detach().clone();
  const auto before_head = lm->outputHeadWeight().detach().clone();
  const auto* identity = lm->inputEmbedding()->weight.unsafeGetTensorImpl();
  lm->resizeTokenEmbeddings(131);
  const auto& after = lm->inputEmbedding()->weight;
  EXPECT_EQ(after.unsafeGetTensorImpl(), identity);  // the same parameter object
  EXPECT_EQ(after.sizes(), torch::IntArrayRef({131, 32}));
  EXPECT_TRUE(torch::equal(after.narrow(0, 0, 128), before_embed));
  EXPECT_GT(after.narrow(0, 128, 3).abs().sum().item<double>(), 0.0);
  EXPECT_EQ(lm->outputHeadWeight().sizes(), torch::IntArrayRef({131, 32}));
  EXPECT_TRUE(torch::equal(lm->outputHeadWeight().narrow(0, 0, 128), before_head));
  lm->resizeTokenEmbeddings(100);  // MPT / RedPajama shrink their padded matrix
  EXPECT_TRUE(torch::equal(lm->inputEmbedding()->weight, before_embed.narrow(0, 0, 100)));
}

TEST(Flamingo, LoadReportClassifiesKeys) {
  auto source = buildTiny("opt", 1);
  auto target = buildTiny("opt", 2);
  auto state = toMap(source->namedParameters());
  // DDP prefix, the reference's duplicate references, a tied head, junk, a wrong shape, a gap.
  const std::string l0 = "lang_encoder.model.decoder.layers.0.";
  state["module.perceiver.latents"] = state.at("perceiver.latents");
  state["lang_encoder.old_decoder_blocks.0.fc1.weight"] = state.at(l0 + "decoder_layer.fc1.weight");
  state["lang_encoder.gated_cross_attn_layers.1.attn.to_q.weight"] =
      state.at("lang_encoder.model.decoder.layers.1.gated_cross_attn_layer.attn.to_q.weight");
  state["lang_encoder.lm_head.weight"] = state.at("lang_encoder.model.decoder.embed_tokens.weight");
  state["lang_encoder.something_else"] = torch::zeros({1});
  state["perceiver.norm.weight"] = torch::zeros({7});
  state.erase("vision_encoder.proj");
  // Only an alias carries this one: it must load through the alias.
  const auto via_alias = state.at(l0 + "gated_cross_attn_layer.ff.1.weight");
  state.erase(l0 + "gated_cross_attn_layer.ff.1.weight");
  state["lang_encoder.gated_cross_attn_layers.0.ff.1.weight"] = via_alias;

  const auto report = target->loadStateDict(state);
  EXPECT_FALSE(report.ok());
  EXPECT_EQ(report.missing, std::vector<std::string>{"vision_encoder.proj"});
  EXPECT_EQ(report.unexpected, std::vector<std::string>{"lang_encoder.something_else"});
  ASSERT_EQ(report.mismatched.size(), 1u);
  EXPECT_EQ(report.mismatched[0].name, "perceiver.norm.weight");
  EXPECT_EQ(report.mismatched[0].expected, std::vector<int64_t>{32});
  EXPECT_EQ(report.ignored.size(), 4u);  // module.*, old_decoder_blocks, gated_cross_attn_layers.1, lm_head
  const auto total = source->namedParameters().size();
  EXPECT_EQ(report.loaded.size(), total - 2);
  const auto target_params = toMap(target->namedParameters());
  EXPECT_TRUE(torch::equal(target_params.at(l0 + "gated_cross_attn_layer.ff.1.weight"), via_alias));
  const auto summary = report.summary();
  EXPECT_NE(summary.find("missing 1 (vision_encoder.proj)"), std::string::npos) << summary;
  EXPECT_NE(summary.find("perceiver.norm.weight: expected [32], got [7]"), std::string::npos) << summary;
  EXPECT_NE(summary.find("unexpected 1 (lang_encoder.something_else)"), std::string::npos) << summary;
}

TEST(Flamingo, CheckpointWithoutFrozenWeightsReportsThemAsExpectedFrozen) {
  auto source = buildTiny("opt", 1);
  auto target = buildTiny("opt", 2);
  source->freezeAsOpenFlamingo();
  std::map<std::string, torch::Tensor> state;
  std::set<std::string> frozen;
  for (const auto& [name, t] : source->namedParameters()) {
    if (t.requires_grad())
      state[name] = t;
    else
      frozen.insert(name);
  }
  ASSERT_FALSE(frozen.empty());
  state.erase("perceiver.latents");  // a trainable one: really missing
  auto report = target->loadStateDict(state);
  EXPECT_EQ(report.missing.size(), frozen.size() + 1);
  report.markExpectedFrozen([&](const std::string& name) { return frozen.count(name) != 0; });
  EXPECT_EQ(report.missing, std::vector<std::string>{"perceiver.latents"});
  EXPECT_EQ(std::set<std::string>(report.expectedFrozen.begin(), report.expectedFrozen.end()), frozen);
  EXPECT_FALSE(report.ok());
  const auto summary = report.summary();
  EXPECT_NE(summary.find(std::to_string(frozen.size()) + " frozen kept from the base weights"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("missing 1 (perceiver.latents)"), std::string::npos) << summary;
}

TEST(Flamingo, LoadVisionFromAnOpenClipStateDict) {
  auto source = buildTiny("opt", 1);
  auto target = buildTiny("opt", 2);
  std::map<std::string, torch::Tensor> clip;
  for (const auto& [name, t] : source->namedParameters()) {
    if (name.rfind("vision_encoder.", 0) == 0) clip["visual." + name.substr(15)] = t.detach().clone();
  }
  clip["token_embedding.weight"] = torch::zeros({4, 4});  // text tower: ignored
  clip["logit_scale"] = torch::zeros({});
  const auto report = target->loadVisionStateDict(clip);
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_EQ(report.ignored.size(), 2u);
  EXPECT_TRUE(torch::equal(target->visionEncoder()->conv1->weight, source->visionEncoder()->conv1->weight));
}

// amp_bf16 (fp32 weights, CPU autocast) and pure bf16 weights run forward and
// backward with finite results close to fp32.
TEST(Flamingo, RunsUnderCpuAutocastAndInBfloat16) {
  for (const std::string variant : {"opt", "mpt-1b", "pythia", "llama"}) {
    auto model = buildTiny(variant);
    model->freezeAsOpenFlamingo();
    testing::setGates(model);
    const auto batch = tinyBatch(model->options());
    const auto fp32 = model->forward(batch.vision_x, batch.input_ids, batch.attention_mask).detach();

    torch::Tensor amp;
    {
      testing::CpuAutocast autocast;
      amp = model->forward(batch.vision_x, batch.input_ids, batch.attention_mask);
    }
    EXPECT_EQ(amp.scalar_type(), torch::kBFloat16) << variant;
    EXPECT_TRUE(torch::allclose(amp.to(torch::kFloat), fp32, 0.05, 0.05)) << variant;
    amp.to(torch::kFloat).pow(2).mean().backward();
    EXPECT_TRUE(torch::isfinite(model->perceiver()->latents.grad()).all().item<bool>()) << variant;

    model->to(torch::kBFloat16);
    const auto bf16 =
        model->forward(batch.vision_x.to(torch::kBFloat16), batch.input_ids, batch.attention_mask);
    EXPECT_EQ(bf16.scalar_type(), torch::kBFloat16) << variant;
    EXPECT_TRUE(torch::allclose(bf16.to(torch::kFloat), fp32, 0.1, 0.1)) << variant;
    bf16.to(torch::kFloat).pow(2).mean().backward();
    EXPECT_TRUE(torch::isfinite(model->inputEmbedding()->weight.grad().to(torch::kFloat)).all().item<bool>())
        << variant;
  }
}

TEST(Flamingo, ForwardChecksItsInputs) {
  auto model = buildTiny("opt");
  const auto batch = tinyBatch(model->options());
  EXPECT_THROW(model->forward(batch.vision_x.squeeze(2), batch.input_ids, batch.attention_mask), c10::Error);
  auto options = tinyOptions("opt");
  options.lm().family("gpt2");
  EXPECT_THROW(Flamingo{options}, c10::Error);
}

}  // namespace
}  // namespace fs::model
