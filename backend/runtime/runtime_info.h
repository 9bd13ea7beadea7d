// Facts about the LibTorch runtime this engine was built with and runs on.
// No torch types in this header: the CLI and the run manifest use it.
#pragma once

#include <string>

namespace fs::runtime {

std::string engineVersion();    // Flamingo Studio version, e.g. "0.1.0"
std::string libtorchVersion();  // e.g. "2.11.0"
bool builtWithCuda();           // FS_WITH_CUDA at build time
std::string
cudaRuntimeVersion();           // the CUDA runtime LibTorch was built with, e.g. "13.0"; empty without CUDA
bool builtWithNccl();           // c10d's NCCL process group is compiled in (USE_C10D_NCCL)
bool cudaAvailable();           // a CUDA device is usable now
int cudaDeviceCount();          // CUDA devices this process sees (0 without CUDA)
int intraOpThreads();           // torch::get_num_threads()
std::string blasDescription();  // the BLAS ATen was built against (its BLAS_INFO), e.g. "mkl"
std::string sgemmLibrary();  // file name of the library this process's sgemm_ resolves to (NOTE [One BLAS])

}  // namespace fs::runtime
