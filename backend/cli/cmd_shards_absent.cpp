// shards, in a build without the data codecs (FS_BUILD_DATA_CODECS=OFF; NOTE
// [Builds without data codecs] in backend/trainer/data_sources.h): the command
// stays listed and says why its tools are not there, instead of an unknown
// command. cmd_shards.cpp holds the tools in a build with the codecs.
#include <ostream>

#include "backend/cli/commands.h"

namespace fs::cli {

int runShards(const std::vector<std::string>& args, Io& io) {
  const char* kWhy =
      "this build has no data codecs (FS_BUILD_DATA_CODECS=OFF); the shard tools (make-synthetic, inspect, "
      "validate, convert-mmc4) need them\n";
  if (args.size() == 1 && args[0] == "--help") {
    io.out << "usage: flamingo-train shards <tool> [options]\n\n" << kWhy;
    return kExitOk;
  }
  io.err << "flamingo-train shards: " << kWhy;
  return kExitFailure;
}

}  // namespace fs::cli
