// Which instruction-set extensions this CPU has, asked once. The image
// kernels keep a portable loop beside each hand-written AVX2 one and pick at
// run time, so one binary runs on any x86-64.
#pragma once

namespace fs::data {

inline bool cpuHasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

}  // namespace fs::data
