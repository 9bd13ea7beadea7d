// Random bytes and mutated documents into the YAML loader and --set parser:
// never a crash or an escaping exception, always a message.
#include <gtest/gtest.h>

#include <random>

#include "backend/protocol/config/config_override.h"
#include "backend/protocol/config/config_yaml.h"

namespace fs::protocol {
namespace {

TEST(ConfigFuzz, RandomBytes) {
  std::mt19937 rng(7);
  for (int i = 0; i < 3000; ++i) {
    std::string s(rng() % 200, '\0');
    for (auto& ch : s) ch = static_cast<char>(rng() % 256);
    ConfigLoad load = loadConfigYaml(s, "fuzz");
    for (const auto& p : load.problems) EXPECT_FALSE(p.message.empty());
  }
}

TEST(ConfigFuzz, MutatedValidDocuments) {
  const std::string base = dumpConfigYaml(defaultRunConfig(), {.comments = true});
  const std::string alphabet = ":-[]{},#&*!|>'\"%@` \n\t0123456789abcxyz.~?";
  std::mt19937 rng(11);
  for (int i = 0; i < 1500; ++i) {
    std::string s = base;
    for (int k = 1 + rng() % 8; k > 0; --k) {
      const size_t pos = rng() % s.size();
      switch (rng() % 3) {
        case 0:
          s[pos] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          s.insert(pos, 1, alphabet[rng() % alphabet.size()]);
          break;
        default:
          s.erase(pos, 1 + rng() % 20);
          break;
      }
    }
    ConfigLoad load = loadConfigYaml(s, "mutated");
    for (const auto& p : load.problems) EXPECT_FALSE(p.message.empty());
  }
}

TEST(ConfigFuzz, DeepNestingIsAnErrorNotAStackOverflow) {
  ConfigLoad load = loadConfigYaml(std::string(100000, '['), "deep");
  EXPECT_FALSE(load.ok());
}

TEST(ConfigFuzz, RandomOverrides) {
  std::mt19937 rng(3);
  const std::string alphabet = "abcdefghijklmnopqrstuvwxyz_.[]=0123456789,-";
  for (int i = 0; i < 3000; ++i) {
    RunConfig c = defaultRunConfig();
    std::string s(rng() % 40, 'a');
    for (auto& ch : s) ch = alphabet[rng() % alphabet.size()];
    Status st = applyOverride(&c, s);
    if (!st.isOk()) {
      EXPECT_FALSE(st.message().empty());
    }
  }
}

}  // namespace
}  // namespace fs::protocol
