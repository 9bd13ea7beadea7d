// NOTE [Unit hooks]: LibTorch's C++ modules have no forward hooks, so the
// model calls these around the forward of each part a sharding engine may
// wrap as a unit (the vision tower and each residual block, the Perceiver
// and each layer, the input embedding - at the lookup and again at a tied
// head, which reads its weight -, every gated cross-attention block, every
// decoder layer, an untied head). The model stays
// single-device and knows nothing about sharding: with no hooks set it runs
// exactly as before. Inside an activation-checkpointed region the calls sit
// inside the recomputed function, so a recompute during backward announces
// the unit again.
//
// Thread-safety: called on the thread running forward / backward.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <memory>
#include <utility>

namespace fs::model {

class UnitHooks {
 public:
  virtual ~UnitHooks() = default;
  // Before `module` reads its parameters; `input` is the tensor its
  // backward ends at (undefined or not requiring grad when there is none).
  virtual void before(torch::nn::Module& module, const at::Tensor& input) = 0;
  // After its forward produced `output`.
  virtual void after(torch::nn::Module& module, const at::Tensor& output) = 0;
};

// NOTE [Leaf hooks in the recompute]: since PyTorch 2.0 a hook registered on a
// leaf tensor (Tensor::register_hook) also runs when torch::autograd::grad takes
// that tensor's gradient, not only when AccumulateGrad adds it. A checkpointed
// region's backward (activation_checkpoint.cpp) takes its parameters' gradients
// that way and then returns them, so each parameter's hook runs twice: once with
// the gradient about to arrive, once on its real arrival. Hooks that count
// arrivals (FSDP's) skip the first: takingRecomputeGradients() is true on the
// thread taking them, for the duration of that call.
//
// NOTE [No lone .tbss]: the flag is stored inverted so that its initial value
// is non-zero and it lands in .tdata (bytes in the file, inside the RW segment),
// not .tbss. As the binary's only thread-local, a 1-byte .tbss was placed by
// GNU ld 2.40 at the last byte of the page before a page-aligned RELRO
// segment, so RELRO began on an unmapped page and the loader's mprotect failed
// ("cannot apply additional memory protection after relocation": every run of
// param_inventory_test once the code around it had that size).
inline thread_local bool tOutsideRecomputeGradients = true;

inline bool takingRecomputeGradients() {
  return !tOutsideRecomputeGradients;
}

// Marks a recompute's own gradient call on this thread; restores the previous value.
class RecomputeGradientsScope {
 public:
  RecomputeGradientsScope() : previous_(tOutsideRecomputeGradients) { tOutsideRecomputeGradients = false; }
  ~RecomputeGradientsScope() { tOutsideRecomputeGradients = previous_; }
  RecomputeGradientsScope(const RecomputeGradientsScope&) = delete;
  RecomputeGradientsScope& operator=(const RecomputeGradientsScope&) = delete;

 private:
  bool previous_;
};

// f() between hooks->before and hooks->after; just f() without hooks.
template <class F>
at::Tensor runUnit(const std::shared_ptr<UnitHooks>& hooks, torch::nn::Module& module,
                   const at::Tensor& input, F&& f) {
  if (!hooks) return f();
  hooks->before(module, input);
  at::Tensor out = f();
  hooks->after(module, out);
  return out;
}

}  // namespace fs::model
