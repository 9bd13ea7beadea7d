#include "backend/model/intra_op.h"

#include <ATen/Parallel.h>

#include "backend/model/row_major_gemm.h"

#ifndef _OPENMP
#error "intra_op.cpp must be compiled with -fopenmp (NOTE [Our parallel loops])"
#endif

namespace fs::model {

void parallelFor(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)>& f) {
  at::parallel_for(begin, end, grain, [&](int64_t b, int64_t e) { f(b, e); });
}

void parallelForSerialBlas(int64_t begin, int64_t end, int64_t grain,
                           const std::function<void(int64_t, int64_t)>& f) {
  at::parallel_for(begin, end, grain, [&](int64_t b, int64_t e) {
    const SerialBlasInParallelRegion serialBlas;
    f(b, e);
  });
}

}  // namespace fs::model
