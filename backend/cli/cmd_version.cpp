#include <ostream>

#include "backend/cli/commands.h"
#include "backend/protocol/config/config_types.h"
#include "backend/protocol/wire/events.h"
#ifdef FS_HAVE_ENGINE
#include "backend/runtime/runtime_info.h"
#endif

namespace fs::cli {

int runVersion(const std::vector<std::string>& args, Io& io) {
  if (!args.empty() && args[0] != "--help") {
    io.err << "flamingo-train version: takes no arguments\n";
    return kExitUsage;
  }
  if (!args.empty()) {
    io.out << "usage: flamingo-train version\n\nPrints engine, schema and LibTorch versions.\n";
    return kExitOk;
  }
#ifdef FS_HAVE_ENGINE
  io.out << "flamingo-train " << runtime::engineVersion() << "\n"
         << "config schema " << protocol::kConfigSchemaVersion << ", event schema "
         << protocol::kEventSchemaVersion << "\n"
         << "LibTorch " << runtime::libtorchVersion()
         << ", CUDA build: " << (runtime::builtWithCuda() ? "yes" : "no")
         << ", CUDA device: " << (runtime::cudaAvailable() ? "yes" : "no")
         << ", threads: " << runtime::intraOpThreads() << "\n";
#else
  io.out << "flamingo-train (tools only: built without the LibTorch engine)\n"
         << "config schema " << protocol::kConfigSchemaVersion << ", event schema "
         << protocol::kEventSchemaVersion << "\n";
#endif
  return kExitOk;
}

}  // namespace fs::cli
