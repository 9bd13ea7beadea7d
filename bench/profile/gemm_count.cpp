// gemm_count: an LD_PRELOAD library that counts the BLAS sgemm_ and
// cblas_sgemm calls (our packed attention calls the latter) of a process and their floating-point operations
// (2 m n k each), printed to stderr at exit. LibTorch's CPU matmuls (ours and Debian's python3-torch) reach
// OpenBLAS through sgemm_, so the same count works on both sides of bench/train_step: the work each side asks
// the BLAS for, independent of the machine's load. GEMM_COUNT_SHAPES=1 also prints every call's transposes
// and m n k. Not thread-safe beyond the counters' races: run at one intra-op thread.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace {

using SgemmFn = void (*)(const char*, const char*, const int*, const int*, const int*, const float*,
                         const float*, const int*, const float*, const int*, const float*, float*,
                         const int*);

// cblas_sgemm's enums passed as int (CblasRowMajor = 101, CblasNoTrans = 111, CblasTrans = 112).
using CblasSgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                              float, float*, int);

SgemmFn realSgemm = nullptr;
CblasSgemmFn realCblasSgemm = nullptr;
double flops = 0;
long calls = 0;
bool reporting = false;  // report() registered

void report() {
  std::fprintf(stderr, "gemm_count: sgemm calls %ld GFLOP %.4f\n", calls, flops / 1e9);
}

template <class Fn>
Fn resolve(const char* name) {
  // A library dlopen'ed without RTLD_GLOBAL (Python's torch) is not on RTLD_NEXT's path.
  void* f = dlsym(RTLD_NEXT, name);
  if (f == nullptr) f = dlsym(dlopen("libblas.so.3", RTLD_NOW), name);
  if (f == nullptr) {
    std::fprintf(stderr, "gemm_count: no %s in libblas.so.3\n", name);
    std::abort();
  }
  if (!reporting) std::atexit(report);
  reporting = true;
  return reinterpret_cast<Fn>(f);
}

void count(char ta, char tb, int m, int n, int k) {
  flops += 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  ++calls;
  if (std::getenv("GEMM_COUNT_SHAPES") != nullptr)
    std::fprintf(stderr, "sgemm %c%c %d %d %d\n", ta, tb, m, n, k);
}

}  // namespace

extern "C" void sgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k,
                       const float* alpha, const float* a, const int* lda, const float* b, const int* ldb,
                       const float* beta, float* c, const int* ldc) {
  if (realSgemm == nullptr) realSgemm = resolve<SgemmFn>("sgemm_");
  count(*ta, *tb, *m, *n, *k);
  realSgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

extern "C" void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float* a,
                            int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  if (realCblasSgemm == nullptr) realCblasSgemm = resolve<CblasSgemmFn>("cblas_sgemm");
  count(ta == 111 ? 'N' : 'T', tb == 111 ? 'N' : 'T', m, n, k);
  realCblasSgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
