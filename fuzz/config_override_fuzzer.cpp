// Fuzz target: `--set key=value` overrides (protocol::applyOverrides) on the
// default config, one assignment per input line; the result is validated and
// dumped (what `flamingo-train validate --set ...` does).
#include <string>
#include <vector>

#include "backend/protocol/config/config_override.h"
#include "backend/protocol/config/config_yaml.h"
#include "backend/protocol/config/validate.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fs::protocol;
  std::vector<std::string> assignments;
  std::string_view rest = fs::fuzz::text(data, size);
  while (!rest.empty() && assignments.size() < 64) {
    auto [line, tail] = fs::fuzz::splitAt(rest, "\n");
    assignments.emplace_back(line);
    rest = tail;
  }
  RunConfig config = defaultRunConfig();
  const auto problems = applyOverrides(&config, assignments);
  if (hasErrors(problems)) return 0;
  (void)validateConfig(config);
  (void)dumpConfigYaml(config);
  return 0;
}
