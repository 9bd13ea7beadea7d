// Parallel loops for our own CPU kernels (attention blocks, dropout) over
// LibTorch's intra-op threads: its libgomp pool, the one ATen's ops and MKL
// use. Call from any thread; a call from inside a parallel region runs inline.
//
// NOTE [Our parallel loops]: at::parallel_for is a header template whose
// OpenMP region exists only in files compiled with -fopenmp. Our libraries are
// not (the precompiled header they share is built without it), so every
// at::parallel_for in them ran its chunks one after another on the calling
// thread, and a kernel's "blocks in parallel" were not. intra_op.cpp alone is
// compiled with -fopenmp (backend/model/CMakeLists.txt) and instantiates it.
#pragma once

#include <cstdint>
#include <functional>

namespace fs::model {

// f(b, e) over [begin, end) in chunks of at least `grain` indices, in parallel
// over the intra-op threads (at::parallel_for's split). Each chunk writes only
// what its indices own.
void parallelFor(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)>& f);

// As parallelFor, with every chunk's BLAS calls serial on its own thread
// (NOTE [One BLAS thread per block] in row_major_gemm.h): for loops whose
// chunks call BLAS.
void parallelForSerialBlas(int64_t begin, int64_t end, int64_t grain,
                           const std::function<void(int64_t, int64_t)>& f);

}  // namespace fs::model
