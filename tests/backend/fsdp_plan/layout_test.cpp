// Wrap policies -> unit layouts on the tiny and small presets (exact unit
// lists, counted by hand from the model's shapes), the tie rule, and the
// errors that name the field.
#include "backend/fsdp_plan/layout.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "plan_test_util.h"

namespace fs::fsdp_plan {
namespace {

struct Expected {
  std::string path;
  int64_t params;
  int64_t frozen;
};

Layout layoutFor(const protocol::RunConfig& c) {
  auto inv = buildParamInventory(c.model);
  EXPECT_TRUE(inv.isOk()) << inv.status().message();
  auto policy = wrapPolicyFromConfig(c.parallel);
  EXPECT_TRUE(policy.isOk()) << policy.status().message();
  auto layout = buildLayout(*inv, *policy, *oursPrecision(c));
  EXPECT_TRUE(layout.isOk()) << layout.status().message();
  // Every parameter in exactly one unit.
  std::set<std::string> seen;
  int64_t total = 0;
  for (const auto& u : layout->units) {
    total += u.paramCount;
    for (const auto& p : u.params) EXPECT_TRUE(seen.insert(p).second) << p << " in two units";
  }
  EXPECT_EQ(seen.size(), inv->params.size());
  EXPECT_EQ(total, inv->numel());
  return *layout;
}

void expectUnits(const Layout& layout, const std::vector<Expected>& expected) {
  ASSERT_EQ(layout.units.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(layout.units[i].path, expected[i].path) << i;
    EXPECT_EQ(layout.units[i].paramCount, expected[i].params) << expected[i].path;
    EXPECT_EQ(layout.units[i].frozenCount, expected[i].frozen) << expected[i].path;
    EXPECT_EQ(layout.units[i].gatherOrder, static_cast<int>(i));
    EXPECT_EQ(layout.units[i].trainable, expected[i].params > expected[i].frozen);
  }
}

// Tiny (OPT, tied head): vision 33,280 (blocks 12,704 each, conv1 6,144,
// own 1,600, ln_pre / ln_post 64), perceiver 8,576 (layer 8,384),
// embeddings 130 x 32 and 130 x 32 positions, gated blocks 8,322,
// decoder layers 8,544, final norm 64.
const std::string kLayers = "lang_encoder.model.decoder.layers.";

TEST(Layout, OpenFlamingoOnTiny) {
  const auto layout = layoutFor(test::preset("tiny"));
  expectUnits(layout, {{"", 4224, 4224},  // embed_positions + final norm
                       {"vision_encoder", 33280, 33280},
                       {"perceiver", 8576, 0},
                       {"lang_encoder.model.decoder.embed_tokens", 4160, 0},
                       {kLayers + "0.gated_cross_attn_layer", 8322, 0},
                       {kLayers + "0.decoder_layer", 8544, 8544},
                       {kLayers + "1.gated_cross_attn_layer", 8322, 0},
                       {kLayers + "1.decoder_layer", 8544, 8544}});
  // The tied head's unit folded into the embedding's (NOTE [Tied parameters in the layout]).
  EXPECT_EQ(layout.units[3].mergedFrom, std::vector<std::string>{"lang_encoder.lm_head"});
  EXPECT_EQ(layout.units[3].aliases, std::vector<std::string>{"lang_encoder.lm_head.weight"});
  EXPECT_FALSE(layout.units[1].inBackward);
}

TEST(Layout, OpenFlamingoKeepsAnUntiedHeadApart) {
  const auto layout = layoutFor(test::preset("tiny", {"model.lm.tied_head=false"}));
  ASSERT_EQ(layout.units.size(), 9u);
  EXPECT_EQ(layout.units.back().path, "lang_encoder.lm_head");
  EXPECT_EQ(layout.units.back().paramCount, 4160);
  EXPECT_EQ(layout.units.back().frozenCount, 4160);  // an untied head stays frozen
}

TEST(Layout, TransformerLayerOnTiny) {
  const auto layout = layoutFor(test::preset("tiny", {"parallel.wrap_policy=transformer_layer"}));
  // Root: vision own + conv1 + ln_pre + ln_post (7,872), latents + perceiver norm (192),
  // embeddings (8,320, of which 4,160 train), final norm 64.
  expectUnits(layout, {{"", 16448, 12096},
                       {"vision_encoder.transformer.resblocks.0", 12704, 12704},
                       {"vision_encoder.transformer.resblocks.1", 12704, 12704},
                       {"perceiver.layers.0", 8384, 0},
                       {kLayers + "0.gated_cross_attn_layer", 8322, 0},
                       {kLayers + "0.decoder_layer", 8544, 8544},
                       {kLayers + "1.gated_cross_attn_layer", 8322, 0},
                       {kLayers + "1.decoder_layer", 8544, 8544}});
}

TEST(Layout, SizeBasedOnTiny) {
  // Bottom-up with 5,000: conv1 (6,144) and each ViT mlp (8,352) first; a
  // block's rest (4,352) stays for the tower (1,600 + 64 + 2 x 4,352 + 64);
  // the perceiver layer; each gated block and decoder layer; the LM keeps
  // both embeddings and the final norm (8,384); the root the latents and norm.
  const auto layout =
      layoutFor(test::preset("tiny", {"parallel.wrap_policy=size_based", "parallel.wrap_min_params=5000"}));
  expectUnits(layout, {{"", 192, 0},
                       {"vision_encoder", 10432, 10432},
                       {"vision_encoder.conv1", 6144, 6144},
                       {"vision_encoder.transformer.resblocks.0.mlp", 8352, 8352},
                       {"vision_encoder.transformer.resblocks.1.mlp", 8352, 8352},
                       {"perceiver.layers.0", 8384, 0},
                       {"lang_encoder", 8384, 4224},
                       {kLayers + "0.gated_cross_attn_layer", 8322, 0},
                       {kLayers + "0.decoder_layer", 8544, 8544},
                       {kLayers + "1.gated_cross_attn_layer", 8322, 0},
                       {kLayers + "1.decoder_layer", 8544, 8544}});
}

TEST(Layout, SizeBasedAboveTheModelIsOneRootUnit) {
  const auto layout = layoutFor(test::preset("tiny", {"parallel.wrap_policy=size_based"}));  // 100M default
  expectUnits(layout, {{"", 83972, 54592}});
}

TEST(Layout, OpenFlamingoOnSmall) {
  // Small: ViT 64 px / 16 px patches, width 128, 4 blocks of 198,272 (+ own
  // 18,688, conv1 98,304, two norms 256); perceiver depth 2 (397,056); OPT
  // width 256, ffn 1024: layers of 789,760, embeddings 1,026 x 256 and
  // 514 x 256; gated blocks (before layers 1 and 3) of 623,618.
  const auto layout = layoutFor(test::preset("small"));
  expectUnits(layout, {{"", 131584 + 512, 131584 + 512},
                       {"vision_encoder", 910592, 910592},
                       {"perceiver", 397056, 0},
                       {"lang_encoder.model.decoder.embed_tokens", 262656, 0},
                       {kLayers + "0.decoder_layer", 789760, 789760},
                       {kLayers + "1.gated_cross_attn_layer", 623618, 0},
                       {kLayers + "1.decoder_layer", 789760, 789760},
                       {kLayers + "2.decoder_layer", 789760, 789760},
                       {kLayers + "3.gated_cross_attn_layer", 623618, 0},
                       {kLayers + "3.decoder_layer", 789760, 789760}});
  EXPECT_EQ(layout.numel(), 6108676);
}

TEST(Layout, TransformerLayerOnSmall) {
  const auto layout = layoutFor(test::preset("small", {"parallel.wrap_policy=transformer_layer"}));
  // 4 ViT blocks, 2 perceiver layers, 2 gated blocks, 4 decoder layers, the root.
  ASSERT_EQ(layout.units.size(), 13u);
  EXPECT_EQ(layout.units[0].paramCount, 18688 + 98304 + 512 + 2048 + 256 + 262656 + 131584 + 512);
  EXPECT_EQ(layout.units[0].frozenCount, 18688 + 98304 + 512 + 131584 + 512);
  EXPECT_EQ(layout.units[4].path, "vision_encoder.transformer.resblocks.3");
  EXPECT_EQ(layout.units[4].paramCount, 198272);
  EXPECT_EQ(layout.units[6].path, "perceiver.layers.1");
  EXPECT_EQ(layout.units[6].paramCount, 197376);
  EXPECT_EQ(layout.units[7].path, kLayers + "0.decoder_layer");
  EXPECT_EQ(layout.units[12].path, kLayers + "3.decoder_layer");
}

TEST(Layout, CustomPatternsOnSmall) {
  // Small: 4 OPT layers of width 256, a gated block before layers 1 and 3.
  const auto layout = layoutFor(
      test::preset("small", {"parallel.wrap_policy=custom",
                             "parallel.wrap_patterns=[perceiver, lang_encoder.model.decoder.layers.*]"}));
  ASSERT_EQ(layout.units.size(), 6u);
  EXPECT_EQ(layout.units[0].path, "");
  EXPECT_EQ(layout.units[1].path, "perceiver");
  for (int i = 0; i < 4; ++i) EXPECT_EQ(layout.units[2 + i].path, kLayers + std::to_string(i));
  // A FlamingoLayer unit mixes a trainable gated block and a frozen decoder layer.
  const int64_t d = 256, f = 1024, dv = 128, inner = 128;
  const int64_t decoder = 4 * (d * d + d) + 2 * d + (d * f + f) + (f * d + d) + 2 * d;
  const int64_t gated = 2 + 2 * d + d * inner + dv * 2 * inner + inner * d + 2 * d + 2 * 4 * d * d;
  EXPECT_EQ(layout.units[2].paramCount, decoder);
  EXPECT_EQ(layout.units[3].paramCount, decoder + gated);
  EXPECT_EQ(layout.units[3].frozenCount, decoder);
  EXPECT_TRUE(layout.units[3].trainable);
}

TEST(Layout, TiedParametersEndInOneUnitWhateverThePolicySays) {
  // The head alone: the embedding (in the root) keeps the tensor; the head's unit vanishes.
  auto layout =
      layoutFor(test::preset("tiny", {"parallel.wrap_policy=custom",
                                      "parallel.wrap_patterns=[lang_encoder.lm_head, vision_encoder]"}));
  ASSERT_EQ(layout.units.size(), 2u);
  EXPECT_EQ(layout.units[0].path, "");
  EXPECT_EQ(layout.units[0].mergedFrom, std::vector<std::string>{"lang_encoder.lm_head"});
  EXPECT_NE(layout.unitOfParam("lang_encoder.model.decoder.embed_tokens.weight"), nullptr);
  EXPECT_EQ(layout.unitOfParam("lang_encoder.model.decoder.embed_tokens.weight")->path, "");

  // Both as units: one unit, the embedding's (gathered first).
  layout = layoutFor(
      test::preset("tiny", {"parallel.wrap_policy=custom",
                            "parallel.wrap_patterns=[lang_encoder.lm_head, lang_encoder.*.*.embed_tokens]"}));
  ASSERT_EQ(layout.units.size(), 2u);
  EXPECT_EQ(layout.units[1].path, "lang_encoder.model.decoder.embed_tokens");
  EXPECT_EQ(layout.units[1].mergedFrom, std::vector<std::string>{"lang_encoder.lm_head"});
  EXPECT_EQ(layout.units[1].paramCount, 4160);
}

TEST(Layout, ReferenceUnfreezesDecoderLayersAndKeepsFloat32) {
  const auto c = test::preset("tiny", {"optim.precision=amp_bf16"});
  auto inv = buildParamInventory(c.model);
  auto ours = oursPrecision(c);
  ASSERT_TRUE(ours.isOk());
  EXPECT_EQ(ours->frozen, Dtype::kBFloat16);
  auto ref = buildReferenceLayout(*inv, *ours);
  ASSERT_TRUE(ref.isOk());
  EXPECT_EQ(ref->policy, "reference_fsdp1");
  for (const auto& u : ref->units) {
    EXPECT_EQ(u.dtype, Dtype::kFloat32) << u.path;
    EXPECT_EQ(u.unfrozenCount, u.moduleType == "DecoderLayer" ? u.frozenCount : 0) << u.path;
  }
}

TEST(Layout, ErrorsNameTheFieldAndValue) {
  auto c =
      test::preset("tiny", {"parallel.wrap_policy=custom", "parallel.wrap_patterns=[lang_encoder.nope.*]"});
  auto inv = buildParamInventory(c.model);
  auto policy = wrapPolicyFromConfig(c.parallel);
  ASSERT_TRUE(policy.isOk());
  auto layout = buildLayout(*inv, *policy, *oursPrecision(c));
  ASSERT_FALSE(layout.isOk());
  EXPECT_NE(layout.status().message().find("parallel.wrap_patterns"), std::string::npos);
  EXPECT_NE(layout.status().message().find("'lang_encoder.nope.*'"), std::string::npos);

  c.parallel.wrap_patterns = {"lang_encoder.model.decoder.layers"};
  layout = buildLayout(*inv, *wrapPolicyFromConfig(c.parallel), *oursPrecision(c));
  ASSERT_FALSE(layout.isOk());
  EXPECT_NE(layout.status().message().find("container"), std::string::npos);

  c.parallel.wrap_patterns.clear();
  EXPECT_NE(wrapPolicyFromConfig(c.parallel).status().message().find("parallel.wrap_patterns"),
            std::string::npos);

  c.parallel.wrap_policy = "by_magic";
  const auto unknown = wrapPolicyFromConfig(c.parallel);
  ASSERT_FALSE(unknown.isOk());
  EXPECT_NE(unknown.status().message().find("parallel.wrap_policy"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("'by_magic'"), std::string::npos);
}

TEST(Layout, PatternMatchingIsPerComponent) {
  EXPECT_TRUE(matchesModulePattern("a.*.c", "a.b.c"));
  EXPECT_FALSE(matchesModulePattern("a.*", "a.b.c"));
  EXPECT_FALSE(matchesModulePattern("a.*.c", "a.c"));
  EXPECT_TRUE(matchesModulePattern("perceiver", "perceiver"));
}

}  // namespace
}  // namespace fs::fsdp_plan
