// Building a model's modules with their shapes but without their values.
//
// NOTE [Shapes-only construction]: FSDP's delayed init (parallel.delayed_init,
// backend/fsdp/flat_param.h) needs every rank to hold the whole module tree,
// with the parameters' names, shapes, dtypes and requires-grad settings,
// while only rank 0 holds their values. LibTorch 1.13 has no default device
// to build on `meta`; inside this scope the thread's dispatch key set also
// includes Meta, so factory functions and the initialisers run Meta's kernels:
// each parameter's storage is reserved but never written (no resident
// memory, the CPU generator is not advanced) and the tensors keep their CPU
// key set, so FlatParameter can later re-point them with set_data. A tensor
// an out-of-place op computes (`randn(n) * s`) comes out a true meta tensor
// that set_data cannot replace: parameters must be a factory's tensor,
// initialised in place (`randn(n).mul_(s)`); shapesOnlyProblem() names one
// that is not. Anything else a constructor computes into a tensor would be
// garbage: the Flamingo modules compute nothing but parameters (buffers:
// none).
// IncludeDispatchKeyGuard does not give back the thread's exact key set in
// 1.13 (afterwards `item()` dispatched to Meta), so the whole local set is
// saved and forced back.
//
// Thread-safety: affects the calling thread only; not reentrant.
#pragma once

#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/nn/module.h>

#include <string>

namespace fs::model {

class ShapesOnlyScope {
 public:
  ShapesOnlyScope() : saved_(c10::impl::tls_local_dispatch_key_set()) {
    c10::impl::tls_set_dispatch_key_included(c10::DispatchKey::Meta, true);
  }
  ~ShapesOnlyScope() { c10::impl::_force_tls_local_dispatch_key_set(saved_); }
  ShapesOnlyScope(const ShapesOnlyScope&) = delete;
  ShapesOnlyScope& operator=(const ShapesOnlyScope&) = delete;

 private:
  c10::impl::LocalDispatchKeySet saved_;
};

// The first parameter of `module` a shapes-only build left on the meta
// device (see above), by name; "" when there is none.
inline std::string shapesOnlyProblem(const torch::nn::Module& module) {
  for (const auto& p : module.named_parameters()) {
    if (p.value().is_meta()) return p.key();
  }
  return "";
}

}  // namespace fs::model
