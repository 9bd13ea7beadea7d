// Fuzz target: a run config YAML file (protocol::loadConfigYaml). A config that
// loads without errors is validated, dumped and loaded again, and must come back
// equal (config_yaml.h: load(save(c)) == c for every config).
#include "backend/protocol/config/config_yaml.h"
#include "backend/protocol/config/validate.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fs::protocol;
  const ConfigLoad load = loadConfigYaml(std::string(fs::fuzz::text(data, size)), "fuzz.yaml");
  if (!load.ok()) return 0;
  (void)validateConfig(load.config);
  const std::string dumped = dumpConfigYaml(load.config);
  const ConfigLoad again = loadConfigYaml(dumped, "dumped.yaml");
  fs::fuzz::check(again.ok(), "the dumped config does not load:\n" + dumped);
  fs::fuzz::check(again.config == load.config, "load(dump(c)) != c for:\n" + dumped);
  return 0;
}
