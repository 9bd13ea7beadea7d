#include "backend/model/row_major_gemm.h"

// The Fortran BLAS entry point. PyTorch's x86 wheels export it from libtorch_cpu (the MKL linked
// into it); the link puts that library first, so this is the sgemm_ LibTorch's own matmuls call.
extern "C" void sgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                       const float* alpha, const float* a, const int* lda, const float* b, const int* ldb,
                       const float* beta, float* c, const int* ldc);

namespace fs::model {

void rowMajorSgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                   const float* b, int ldb, float beta, float* c, int ldc) {
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the same buffers, the operands
  // swapped and m and n exchanged.
  const char ta = trans_b ? 'T' : 'N';
  const char tb = trans_a ? 'T' : 'N';
  sgemm_(&ta, &tb, &n, &m, &k, &alpha, b, &ldb, a, &lda, &beta, c, &ldc);
}

}  // namespace fs::model
