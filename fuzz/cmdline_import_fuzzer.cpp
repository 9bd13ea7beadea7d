// Fuzz target: an OpenFlamingo command line pasted into the import
// (protocol::importOpenFlamingoCmdline: shell words, then train.py's flags).
// An import without errors is exported again (the export re-imports its own
// argv, NOTE [Command-line round trip]).
#include "backend/protocol/cmdline/cmdline.h"
#include "backend/protocol/config/validate.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fs::protocol;
  const CmdlineImport imported = importOpenFlamingoCmdline(std::string(fs::fuzz::text(data, size)));
  if (!imported.ok()) return 0;
  (void)validateConfig(imported.config);
  (void)exportOpenFlamingoCmdline(imported.config);
  return 0;
}
