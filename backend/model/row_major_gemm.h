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

// NOTE [One BLAS thread per block]: the attention kernels run their blocks
// in parallel (parallelForSerialBlas, intra_op.h) and call BLAS inside each.
// PyTorch's MKL threads on LibTorch's own libgomp, whose default allows nested
// parallel regions (omp_get_max_active_levels() is INT_MAX): an sgemm_ in a
// block would open a nested team of the intra-op size, 4 spinning threads on 2
// cores at 2 threads. And a block's products are small (a LAION sample's ~20
// rows x 32 columns), too small to split over threads at all: while the blocks
// ran one after another (NOTE [Our parallel loops]), MKL's fork and join on
// every such call made LAION-shaped packed attention twice as slow at 2
// threads as at 1. This scope makes the calling thread's BLAS serial while it
// lives, inside a parallel region only (outside one, a lone block keeps every
// thread), and restores the previous setting. A BLAS without a per-thread
// setting (no MKL in the LibTorch) is left as it is.
class SerialBlasInParallelRegion {
 public:
  SerialBlasInParallelRegion();
  ~SerialBlasInParallelRegion();
  SerialBlasInParallelRegion(const SerialBlasInParallelRegion&) = delete;
  SerialBlasInParallelRegion& operator=(const SerialBlasInParallelRegion&) = delete;

  // Whether this scope made the thread's BLAS serial.
  bool active() const { return active_; }

 private:
  bool active_ = false;
  int previous_ = 0;
};

// The number of threads BLAS would use for a call from this thread now; 0
// when the BLAS does not say (no MKL).
int blasThreadsForThisThread();

}  // namespace fs::model
