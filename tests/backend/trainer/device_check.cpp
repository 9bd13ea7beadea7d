#include "tests/backend/trainer/device_check.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <atomic>
#include <mutex>
#include <stdexcept>

namespace fs::testing {
namespace {

constexpr auto kKey = c10::DispatchKey::TESTING_ONLY_GenericMode;

enum class Mode { kOff, kCheck, kDefaultDevice };

struct State {
  std::mutex mutex;
  Mode mode = Mode::kOff;
  c10::Device device{c10::kCPU};
  std::vector<std::string> violations;
  int64_t checked = 0;
};

State& state() {
  static State* const s = new State;  // never destroyed: an autograd thread may still report late
  return *s;
}

void noteTensor(const c10::OperatorHandle& op, const at::Tensor& t, const char* role, size_t index,
                State& s) {
  if (!t.defined() || t.device() == s.device) return;
  if (t.device().is_cpu() && t.dim() == 0) return;  // a wrapped scalar
  s.violations.push_back(op.schema().operator_name().name + ": " + role + " " + std::to_string(index) +
                         " is on " + t.device().str() + ", expected " + s.device.str());
}

void noteValue(const c10::OperatorHandle& op, const c10::IValue& v, const char* role, size_t index,
               State& s) {
  if (v.isTensor()) {
    noteTensor(op, v.toTensor(), role, index, s);
  } else if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorList().vec()) noteTensor(op, t, role, index, s);
  } else if (v.isList()) {
    for (const c10::IValue& e : v.toListRef()) {
      if (e.isTensor()) noteTensor(op, e.toTensor(), role, index, s);
    }
  }
}

// The TESTING_ONLY_GenericMode fallback (NOTE [Catching a tensor on the wrong device]).
void genericModeFallback(const c10::OperatorHandle& op, c10::DispatchKeySet /*keys*/,
                         torch::jit::Stack* stack) {
  State& s = state();
  const auto& args = op.schema().arguments();
  const size_t base = stack->size() - args.size();
  Mode mode;
  c10::Device device(c10::kCPU);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    mode = s.mode;
    device = s.device;
  }
  if (mode == Mode::kDefaultDevice) {
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].name() == "device" && (*stack)[base + i].isNone()) (*stack)[base + i] = c10::IValue(device);
    }
  }
  std::vector<c10::IValue> inputs;
  if (mode == Mode::kCheck) inputs.assign(stack->begin() + static_cast<std::ptrdiff_t>(base), stack->end());
  {
    c10::impl::ExcludeDispatchKeyGuard exclude(kKey);
    op.callBoxed(stack);
  }
  if (mode != Mode::kCheck) return;
  const size_t outBase = stack->size() - op.schema().returns().size();
  std::lock_guard<std::mutex> lock(s.mutex);
  ++s.checked;
  for (size_t i = 0; i < inputs.size(); ++i) noteValue(op, inputs[i], "input", i, s);
  for (size_t i = outBase; i < stack->size(); ++i) noteValue(op, (*stack)[i], "output", i - outBase, s);
}

TORCH_LIBRARY_IMPL(_, TESTING_ONLY_GenericMode, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&genericModeFallback>());
}

// ---------------------------------------------------------------- shape-only meta kernels

at::Tensor zerosOnCpu(const at::Tensor& t) {
  return t.defined() && t.is_meta() ? at::zeros(t.sizes(), t.options().device(c10::kCPU)) : t;
}

// Runs the op on zero-filled CPU stand-ins of its meta inputs; returns meta tensors of the results'
// shapes, or the meta input itself where the result aliases it (in-place and out= forms).
void shapeOnlyMetaKernel(const c10::OperatorHandle& op, c10::DispatchKeySet /*keys*/,
                         torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const size_t base = stack->size() - schema.arguments().size();
  std::vector<c10::IValue> originals(stack->begin() + static_cast<std::ptrdiff_t>(base), stack->end());
  for (size_t i = base; i < stack->size(); ++i) {
    c10::IValue& v = (*stack)[i];
    if (v.isTensor()) {
      v = zerosOnCpu(v.toTensor());
    } else if (v.isTensorList()) {
      std::vector<at::Tensor> list;
      for (const at::Tensor& t : v.toTensorList().vec()) list.push_back(zerosOnCpu(t));
      v = c10::IValue(list);
    }
  }
  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
  const auto& returns = schema.returns();
  const size_t outBase = stack->size() - returns.size();
  for (size_t r = 0; r < returns.size(); ++r) {
    c10::IValue& v = (*stack)[outBase + r];
    if (const auto* alias = returns[r].alias_info()) {
      for (size_t a = 0; a < schema.arguments().size(); ++a) {
        const auto* argAlias = schema.arguments()[a].alias_info();
        if (argAlias == nullptr || !(*argAlias == *alias)) continue;
        at::Tensor meta = originals[a].toTensor();
        if (v.isTensor() && meta.sizes() != v.toTensor().sizes()) meta.resize_(v.toTensor().sizes());  // out=
        v = meta;
      }
      continue;
    }
    if (v.isTensor() && v.toTensor().defined()) {
      const at::Tensor t = v.toTensor();
      v = at::empty_strided(t.sizes(), t.strides(), t.options().device(c10::kMeta));
    }
  }
}

// Ops the tiny model's step runs that LibTorch 1.13 has no meta kernel for; none of them has a
// value-dependent output shape.
const std::vector<std::string> kShapeOnlyOps = {
    "aten::index_select",
    "aten::embedding_dense_backward",
    "aten::convolution",        // at this level: on meta, _convolution would pick convolution_overrideable
    "aten::native_layer_norm",  // on meta, layer_norm would take the batch-norm formulation
    "aten::native_layer_norm_backward",
    "aten::logical_and",
    "aten::logical_not",
    "aten::relu",
    "aten::where.self",  // not where(condition), which is nonzero
};

struct MetaKernels {
  MetaKernels() : lib(torch::Library::IMPL, "aten", c10::DispatchKey::Meta, __FILE__, __LINE__) {
    for (const auto& name : kShapeOnlyOps) {
      // "aten::name" gives every overload of that name one, "aten::name.overload" that overload.
      for (const auto& op : c10::Dispatcher::singleton().getAllOpNames()) {
        const std::string full = op.overload_name.empty() ? op.name : op.name + "." + op.overload_name;
        if (op.name != name && full != name) continue;
        auto handle = c10::Dispatcher::singleton().findSchema(op);
        if (!handle || handle->hasKernelForDispatchKey(c10::DispatchKey::Meta)) continue;
        lib.impl(full.c_str(), torch::CppFunction::makeFromBoxedFunction<&shapeOnlyMetaKernel>());
        given.push_back(full);
      }
    }
  }
  torch::Library lib;
  std::vector<std::string> given;
};

MetaKernels& metaKernels() {
  static MetaKernels* const k = new MetaKernels;
  return *k;
}

void enter(Mode mode, c10::Device device) {
  metaKernels();
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.mode != Mode::kOff) throw std::logic_error("device_check: one scope at a time");
  s.mode = mode;
  s.device = device;
  s.violations.clear();
  s.checked = 0;
  c10::impl::tls_set_dispatch_key_included(kKey, true);
}

void leave(const c10::impl::LocalDispatchKeySet& saved) {
  // NOTE [Shapes-only construction] (backend/model/shapes_only.h): the whole local set is forced back.
  c10::impl::_force_tls_local_dispatch_key_set(saved);
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.mode = Mode::kOff;
}

}  // namespace

DeviceCheckScope::DeviceCheckScope(c10::Device expected) : saved_(c10::impl::tls_local_dispatch_key_set()) {
  enter(Mode::kCheck, expected);
}
DeviceCheckScope::~DeviceCheckScope() {
  leave(saved_);
}

std::vector<std::string> DeviceCheckScope::violations() const {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.violations;
}

int64_t DeviceCheckScope::opsChecked() const {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.checked;
}

DefaultDeviceScope::DefaultDeviceScope(c10::Device device) : saved_(c10::impl::tls_local_dispatch_key_set()) {
  enter(Mode::kDefaultDevice, device);
}
DefaultDeviceScope::~DefaultDeviceScope() {
  leave(saved_);
}

const std::vector<std::string>& opsGivenMetaKernels() {
  return metaKernels().given;
}

}  // namespace fs::testing
