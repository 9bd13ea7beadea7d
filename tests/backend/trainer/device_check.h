// Device checks for tests: every ATen op run inside a DeviceCheckScope has
// its tensor inputs and outputs checked against one expected device, and
// DefaultDeviceScope builds modules on a device LibTorch 1.13 cannot move them
// to (meta). A test helper for wrong_device_test, not part of the engine.
//
// NOTE [Catching a tensor on the wrong device]: mixing devices alone does not
// fail reliably: on the meta device `meta + cpu` raises, but matmul, cat and
// index_select with a CPU operand quietly return meta tensors (torch 1.13).
// So both scopes switch on a dispatch key that sits above every other one,
// c10::DispatchKey::TESTING_ONLY_GenericMode, in the thread's included set;
// its boxed fallback (device_check.cpp) sees every op first, takes the key out
// of the thread's set, runs the op (op.callBoxed: dispatch continues as
// usual, autograd included) and then looks at it. The autograd engine carries
// the thread's key set into its worker threads, so backward ops are checked
// too. Ops an op calls inside itself run with the key excluded: only the ops
// our code (or a backward formula) calls are checked, which is where a device
// is chosen. A 0-dim CPU tensor is allowed (a wrapped scalar, as ATen itself
// allows it).
// DefaultDeviceScope uses the same fallback to rewrite an absent `device`
// argument of factory ops (empty, zeros, randn, ...) to its device, so a
// module's constructor builds its parameters there (1.13 has no default
// device, and Module::to(meta) fails in set_data).
// Shape-only meta kernels: the ops of the step that LibTorch 1.13 has no meta
// kernel for (index_select, embedding_dense_backward, convolution,
// native_layer_norm and its backward, logical_and, logical_not, relu,
// where.self; the list in device_check.cpp) get one that runs the op on
// zero-filled CPU stand-ins of the same shapes and returns meta tensors of
// the results' shapes. Only ops whose output shapes do not depend on values
// are listed, and only where no meta kernel exists (a newer LibTorch keeps
// its own): data-dependent ops such as nonzero or item are what the meta run
// is meant to stop at.
//
// Thread-safety: one scope at a time per process (the fallback reads one
// global state); the scopes affect the constructing thread and the autograd
// threads it starts. Not reentrant.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <string>
#include <vector>

namespace fs::testing {

class DeviceCheckScope {
 public:
  explicit DeviceCheckScope(c10::Device expected);
  ~DeviceCheckScope();
  DeviceCheckScope(const DeviceCheckScope&) = delete;
  DeviceCheckScope& operator=(const DeviceCheckScope&) = delete;

  // "aten::zeros: output 0 is on cpu, expected meta", one per offending tensor, in order.
  std::vector<std::string> violations() const;
  int64_t opsChecked() const;

 private:
  c10::impl::LocalDispatchKeySet saved_;
};

class DefaultDeviceScope {
 public:
  explicit DefaultDeviceScope(c10::Device device);
  ~DefaultDeviceScope();
  DefaultDeviceScope(const DefaultDeviceScope&) = delete;
  DefaultDeviceScope& operator=(const DefaultDeviceScope&) = delete;

 private:
  c10::impl::LocalDispatchKeySet saved_;
};

// The ops given shape-only meta kernels (MetaKernels above), by name.
const std::vector<std::string>& opsGivenMetaKernels();

}  // namespace fs::testing
