// version: the engine, schema and LibTorch versions, as text or (--json) as
// one JSON object that the app's pre-flight reads (app/cluster/preflight.h).
#include <nlohmann/json.hpp>
#include <ostream>

#include "backend/cli/args.h"
#include "backend/cli/commands.h"
#include "backend/protocol/config/config_types.h"
#include "backend/protocol/wire/events.h"
#include "backend/protocol/wire/run_manifest.h"
#ifdef FS_HAVE_ENGINE
#include "backend/runtime/runtime_info.h"
#endif

#ifndef FS_CLI_VERSION
#define FS_CLI_VERSION "unknown"
#endif

namespace fs::cli {
const std::vector<OptionSpec> kVersionOptions = {
    {"json", false, false, "", "Print one JSON object (fields below) instead of text"},
    {"help", false, false, "", "Show this help"},
};

namespace {

const char* const kUsage = "usage: flamingo-train version [--json]\n";

const char* const kHelp =
    "\nPrints the engine, schema and LibTorch versions.\n\n"
    "--json prints one JSON object on one line:\n"
    "  engine_version   Flamingo Studio version of this executable, e.g. \"0.1.0\"\n"
    "  config_schema    run config schema version, \"MAJOR.MINOR\"\n"
    "  event_schema     telemetry event schema version, \"MAJOR.MINOR\"\n"
    "  manifest_schema  run manifest schema version, \"MAJOR.MINOR\"\n"
    "  protocol_major   the major of event_schema: the app and the engine must agree on it\n"
    "  libtorch         LibTorch version, null without the engine\n"
    "  cuda_build       built with CUDA\n"
    "  cuda_version     the CUDA runtime LibTorch was built with, e.g. \"13.0\"; null without CUDA\n"
    "  nccl             c10d's NCCL process group is built in\n"
    "  cuda_device      a CUDA device is usable now\n"
    "  cuda_devices     how many CUDA devices this process sees\n"
    "  blas             the BLAS LibTorch was built against, e.g. \"mkl\"; null without the engine\n"
    "  sgemm_library    the library whose sgemm_ this process multiplies with, e.g. \"libtorch_cpu.so\";\n"
    "                   null without the engine\n"
    "  engine           built with the LibTorch engine (false: tools only, cannot train)\n\n";

nlohmann::json versionJson() {
  nlohmann::json j;
#ifdef FS_HAVE_ENGINE
  j["engine_version"] = runtime::engineVersion();
#else
  j["engine_version"] = FS_CLI_VERSION;
#endif
  j["config_schema"] = protocol::kConfigSchemaVersion;
  j["event_schema"] = std::string(protocol::kEventSchemaVersion);
  j["manifest_schema"] = std::string(protocol::kManifestSchemaVersion);
  j["protocol_major"] = protocol::kEventSchemaMajor;
#ifdef FS_HAVE_ENGINE
  j["libtorch"] = runtime::libtorchVersion();
  j["cuda_build"] = runtime::builtWithCuda();
  const std::string cuda = runtime::cudaRuntimeVersion();
  j["cuda_version"] = cuda.empty() ? nlohmann::json(nullptr) : nlohmann::json(cuda);
  j["nccl"] = runtime::builtWithNccl();
  j["cuda_device"] = runtime::cudaAvailable();
  j["cuda_devices"] = runtime::cudaDeviceCount();
  j["blas"] = runtime::blasDescription();
  const std::string sgemm = runtime::sgemmLibrary();
  j["sgemm_library"] = sgemm.empty() ? nlohmann::json(nullptr) : nlohmann::json(sgemm);
  j["engine"] = true;
#else
  j["libtorch"] = nullptr;
  j["cuda_build"] = false;
  j["cuda_version"] = nullptr;
  j["nccl"] = false;
  j["cuda_device"] = false;
  j["cuda_devices"] = 0;
  j["blas"] = nullptr;
  j["sgemm_library"] = nullptr;
  j["engine"] = false;
#endif
  return j;
}

}  // namespace

int runVersion(const std::vector<std::string>& args, Io& io) {
  auto parsed = parseArgs(args, kVersionOptions);
  if (!parsed) {
    io.err << "flamingo-train version: " << parsed.status().message() << "\n" << kUsage;
    return kExitUsage;
  }
  if (!parsed->positionals.empty()) {
    io.err << "flamingo-train version: unexpected argument '" << parsed->positionals[0] << "'\n" << kUsage;
    return kExitUsage;
  }
  if (parsed->has("help")) {
    io.out << kUsage << kHelp << formatOptions(kVersionOptions);
    return kExitOk;
  }
  if (parsed->has("json")) {
    io.out << versionJson().dump() << "\n";
    return kExitOk;
  }
#ifdef FS_HAVE_ENGINE
  const std::string sgemm = runtime::sgemmLibrary();
  io.out << "flamingo-train " << runtime::engineVersion() << "\n"
         << "config schema " << protocol::kConfigSchemaVersion << ", event schema "
         << protocol::kEventSchemaVersion << "\n"
         << "LibTorch " << runtime::libtorchVersion() << ", CUDA build: "
         << (runtime::builtWithCuda() ? "yes (CUDA " + runtime::cudaRuntimeVersion() + ")"
                                      : std::string("no"))
         << ", NCCL: " << (runtime::builtWithNccl() ? "yes" : "no")
         << ", CUDA devices: " << runtime::cudaDeviceCount() << ", threads: " << runtime::intraOpThreads()
         << ", BLAS: " << runtime::blasDescription() << " (sgemm_ from "
         << (sgemm.empty() ? std::string("nowhere") : sgemm) << ")\n";
#else
  io.out << "flamingo-train " << FS_CLI_VERSION << " (tools only: built without the LibTorch engine)\n"
         << "config schema " << protocol::kConfigSchemaVersion << ", event schema "
         << protocol::kEventSchemaVersion << "\n";
#endif
  return kExitOk;
}

}  // namespace fs::cli
