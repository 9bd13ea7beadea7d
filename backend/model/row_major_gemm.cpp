#include "backend/model/row_major_gemm.h"

#include <ATen/Parallel.h>

// The Fortran BLAS entry point. PyTorch's x86 wheels export it from libtorch_cpu (the MKL linked
// into it); the link puts that library first, so this is the sgemm_ LibTorch's own matmuls call.
extern "C" void sgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                       const float* alpha, const float* a, const int* lda, const float* b, const int* ldb,
                       const float* beta, float* c, const int* ldc);

// MKL's per-thread thread count (NOTE [One BLAS thread per block]); weak: absent where the
// LibTorch has no MKL, and then null. The C entry points by their mixed-case names: in PyTorch's
// wheel the lower-case mkl_set_num_threads_local is the Fortran one, which takes a pointer.
extern "C" int MKL_Set_Num_Threads_Local(int nt) __attribute__((weak));
extern "C" int MKL_Get_Max_Threads() __attribute__((weak));

namespace fs::model {

void rowMajorSgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                   const float* b, int ldb, float beta, float* c, int ldc) {
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the same buffers, the operands
  // swapped and m and n exchanged.
  const char ta = trans_b ? 'T' : 'N';
  const char tb = trans_a ? 'T' : 'N';
  sgemm_(&ta, &tb, &n, &m, &k, &alpha, b, &ldb, a, &lda, &beta, c, &ldc);
}

SerialBlasInParallelRegion::SerialBlasInParallelRegion() {
  if (MKL_Set_Num_Threads_Local == nullptr || !at::in_parallel_region()) return;
  // MKL_Set_Num_Threads_Local returns the thread's previous local setting (0: none, follow the global one).
  previous_ = MKL_Set_Num_Threads_Local(1);
  active_ = true;
}

SerialBlasInParallelRegion::~SerialBlasInParallelRegion() {
  if (active_) MKL_Set_Num_Threads_Local(previous_);
}

int blasThreadsForThisThread() {
  return MKL_Get_Max_Threads != nullptr ? MKL_Get_Max_Threads() : 0;
}

}  // namespace fs::model
