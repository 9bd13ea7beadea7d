// Row-major single-precision GEMM for the attention kernels that call BLAS
// directly (packed_attention.cpp, slot_attention.cpp), on the BLAS LibTorch
// itself multiplies with (NOTE [One BLAS] in cmake/FsHelpers.cmake).
// Stateless; safe from any thread.
#pragma once

namespace fs::model {

// C = alpha * op(A) * op(B) + beta * C with C m x n, op(A) m x k, op(B) k x n, every matrix
// row-major with the given row strides; op(X) is X transposed when its flag is set.
void rowMajorSgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                   const float* b, int ldb, float beta, float* c, int ldc);

}  // namespace fs::model
