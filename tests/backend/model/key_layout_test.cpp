// NOTE [Key layout table] (backend/state_keys/flamingo_keys.h): the torch-free
// per-family table `checkpoint check` maps keys with equals what the built
// model answers, for every LM family, tied and untied.
#include <gtest/gtest.h>

#include "backend/state_keys/flamingo_keys.h"
#include "tiny_model.h"

namespace fs::model {
namespace {

using testing::buildTiny;
using testing::tinyConfig;

TEST(KeyLayout, TableEqualsTheModelForEveryFamily) {
  for (const auto& variant : testing::variants()) {
    SCOPED_TRACE(variant);
    const auto config = tinyConfig(variant);
    auto model = buildTiny(variant);
    auto table = state_keys::lmKeyLayout(config.lm.family, config.lm.tied_head);
    ASSERT_TRUE(table.isOk()) << table.status().message();
    EXPECT_EQ(model->lmKeyLayout(), table.value());
  }
}

TEST(KeyLayout, UnknownFamilyNamesTheField) {
  auto table = state_keys::lmKeyLayout("gpt2", true);
  ASSERT_FALSE(table.isOk());
  EXPECT_NE(table.status().message().find("model.lm.family"), std::string::npos);
}

}  // namespace
}  // namespace fs::model
