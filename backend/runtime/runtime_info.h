// Facts about the LibTorch runtime this engine was built with and runs on.
// No torch types in this header: the CLI and the run manifest use it.
#pragma once

#include <string>

namespace fs::runtime {

std::string engineVersion();    // Flamingo Studio version, e.g. "0.1.0"
std::string libtorchVersion();  // e.g. "1.13.1"
bool builtWithCuda();           // FS_WITH_CUDA at build time
bool cudaAvailable();           // a CUDA device is usable now
int intraOpThreads();           // torch::get_num_threads()
std::string blasDescription();  // what at::globalContext reports / the BLAS in use

}  // namespace fs::runtime
