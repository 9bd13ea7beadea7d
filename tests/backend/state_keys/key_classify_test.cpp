// classifyKeys and the Flamingo mappers on names and shapes alone: every key
// and parameter in one class; canonical keys before aliases whatever the
// input order; the copies are exactly the loaded ones; the mappers' rules
// (module. prefix, tied head, recomputed buffers, OpenFlamingo's aliases, a
// Hugging Face LM's layer paths, a full CLIP checkpoint's text tower).
#include "backend/state_keys/key_classify.h"

#include <gtest/gtest.h>

#include "backend/state_keys/flamingo_keys.h"

namespace fs::state_keys {
namespace {

using Names = std::vector<std::string>;

LmKeyLayout llama() {
  auto layout = lmKeyLayout("llama", /*tied_head=*/false);
  EXPECT_TRUE(layout.isOk());
  return layout.value();
}

TEST(ClassifyKeys, EveryKeyInOneClassAndCanonicalBeforeAlias) {
  const std::string l0 = "lang_encoder.model.layers.0.";
  const std::vector<NamedShape> ours = {{"perceiver.latents", {4, 8}},
                                        {l0 + "gated_cross_attn_layer.attn_gate", {1}},
                                        {l0 + "decoder_layer.mlp.up_proj.weight", {16, 8}},
                                        {"perceiver.norm.weight", {8}},
                                        {"vision_encoder.proj", {8, 8}}};
  // Not sorted: the alias comes first and a canonical key for its target after it.
  const std::vector<NamedShape> source = {
      {"lang_encoder.old_decoder_blocks.0.mlp.up_proj.weight", {16, 8}},
      {"module.perceiver.latents", {4, 8}},
      {l0 + "decoder_layer.mlp.up_proj.weight", {16, 8}},
      {"lang_encoder.gated_cross_attn_layers.0.attn_gate", {1}},  // only spelling of its target
      {"perceiver.norm.weight", {7}},
      {"perceiver.latents", {4, 8}},  // second canonical spelling (with module.): ignored
      {l0 + "self_attn.rotary_emb.inv_freq", {4}},
      {"lang_encoder.nothing", {1}},
  };
  const auto c = classifyKeys(ours, source, flamingoKeyMapper(llama()));
  const LoadReport& r = c.report;
  EXPECT_EQ(r.loaded, (Names{l0 + "decoder_layer.mlp.up_proj.weight", "perceiver.latents",
                             l0 + "gated_cross_attn_layer.attn_gate"}));
  EXPECT_EQ(r.missing, Names{"vision_encoder.proj"});
  EXPECT_EQ(r.unexpected, Names{"lang_encoder.nothing"});
  ASSERT_EQ(r.mismatched.size(), 1u);
  EXPECT_EQ(r.mismatched[0], (ShapeMismatch{"perceiver.norm.weight", {8}, {7}}));
  EXPECT_EQ(r.ignored, (Names{l0 + "self_attn.rotary_emb.inv_freq", "perceiver.latents",
                              "lang_encoder.old_decoder_blocks.0.mlp.up_proj.weight"}));
  // Copies: exactly the loaded ones, from the key that loaded each.
  ASSERT_EQ(c.copies.size(), r.loaded.size());
  EXPECT_EQ(c.copies[1],
            (std::pair<std::string, std::string>{"module.perceiver.latents", "perceiver.latents"}));
  EXPECT_EQ(c.copies[2].first, "lang_encoder.gated_cross_attn_layers.0.attn_gate");
  // The same keys in another order: the same report.
  std::vector<NamedShape> reversed(source.rbegin(), source.rend());
  EXPECT_EQ(classifyKeys(ours, reversed, flamingoKeyMapper(llama())).report, r);
}

TEST(ClassifyKeys, ExpectedFrozenAndSummary) {
  const auto c = classifyKeys({{"a", {1}}, {"b", {2}}}, {{"a", {1}}}, [](const std::string& k) {
    return std::optional<KeyTarget>(KeyTarget{KeyTarget::Kind::kParameter, k, false});
  });
  LoadReport r = c.report;
  EXPECT_FALSE(r.ok());
  r.markExpectedFrozen([](const std::string& n) { return n == "b"; });
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.summary(), "loaded 1 of 2 parameters; 1 frozen kept from the base weights");
}

TEST(FlamingoKeys, TiedHeadLanguageModelAndVisionMappers) {
  auto opt = lmKeyLayout("opt", /*tied_head=*/true);
  ASSERT_TRUE(opt.isOk());
  const auto full = flamingoKeyMapper(opt.value());
  EXPECT_EQ(full("lang_encoder.lm_head.weight")->kind, KeyTarget::Kind::kIgnored);
  EXPECT_FALSE(full("lang_encoder.old_decoder_blocks.x.fc1.weight").has_value());  // no layer index
  const auto lm = languageModelKeyMapper(llama());
  EXPECT_EQ(lm("model.layers.3.mlp.up_proj.weight")->name,
            "lang_encoder.model.layers.3.decoder_layer.mlp.up_proj.weight");
  EXPECT_EQ(lm("model.embed_tokens.weight")->name, "lang_encoder.model.embed_tokens.weight");
  EXPECT_TRUE(inLanguageModelScope("lang_encoder.model.norm.weight"));
  EXPECT_FALSE(inLanguageModelScope("lang_encoder.model.layers.0.gated_cross_attn_layer.attn_gate"));
  EXPECT_EQ(visionKeyMapper(true)("visual.proj")->name, "vision_encoder.proj");
  EXPECT_EQ(visionKeyMapper(true)("text_projection")->kind, KeyTarget::Kind::kIgnored);
  EXPECT_EQ(visionKeyMapper(false)("proj")->name, "vision_encoder.proj");
}

// transformers >= 5 names GPT-NeoX's head lm_head (embed_out before): both load
// into our embed_out, the old spelling winning when a file holds both.
TEST(FlamingoKeys, GptNeoxHeadUnderEitherName) {
  auto neox = lmKeyLayout("gpt_neox", /*tied_head=*/false);
  ASSERT_TRUE(neox.isOk());
  const auto full = flamingoKeyMapper(neox.value());
  EXPECT_EQ(full("lang_encoder.embed_out.weight")->name, "lang_encoder.embed_out.weight");
  EXPECT_FALSE(full("lang_encoder.embed_out.weight")->alias);
  EXPECT_EQ(full("module.lang_encoder.lm_head.weight")->name, "lang_encoder.embed_out.weight");
  EXPECT_TRUE(full("lang_encoder.lm_head.weight")->alias);
  const auto lm = languageModelKeyMapper(neox.value());
  EXPECT_EQ(lm("lm_head.weight")->name, "lang_encoder.embed_out.weight");
  EXPECT_EQ(lm("embed_out.weight")->name, "lang_encoder.embed_out.weight");
  auto tied = lmKeyLayout("gpt_neox", /*tied_head=*/true);
  EXPECT_EQ(flamingoKeyMapper(tied.value())("lang_encoder.lm_head.weight")->kind, KeyTarget::Kind::kIgnored);
  // Only GPT-NeoX has the second name.
  EXPECT_EQ(flamingoKeyMapper(llama())("lang_encoder.embed_out.weight")->name,
            "lang_encoder.embed_out.weight");
}

}  // namespace
}  // namespace fs::state_keys
