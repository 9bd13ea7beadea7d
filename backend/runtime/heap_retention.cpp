#include "backend/runtime/heap_retention.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace fs::runtime {

bool retainFreedHeap() {
#if defined(__GLIBC__)
  const bool mmapSet = mallopt(M_MMAP_THRESHOLD, static_cast<int>(kMmapThresholdBytes)) == 1;
  const bool trimSet = mallopt(M_TRIM_THRESHOLD, static_cast<int>(kTrimThresholdBytes)) == 1;
  return mmapSet && trimSet;
#else
  return false;
#endif
}

}  // namespace fs::runtime
