// A stand-in for a GPU on a machine without one, for tests: a device of its
// own whose tensors live in host memory and compute with the CPU's kernels.
//
// NOTE [A stand-in device]: what a GPU run does differently from a CPU run
// is mostly *where* tensors live, and a CPU run cannot show it: `cpu` is both
// the host and the device. The stand-in is LibTorch's PrivateUse1 device
// type, registered as `standin` (standin:0), with
//  - an allocator (the CPU's, its data pointers marked standin:0), a device
//    guard without streams (events complete at once) and the accelerator
//    hooks: registered, PrivateUse1 is the process's accelerator, whose
//    streams the autograd engine uses for its tensors;
//  - one boxed kernel for every ATen op (a backend fallback): the op's
//    stand-in tensors are handed to the CPU kernel as CPU tensors over the
//    same memory; what the kernel returns is mapped back: the argument
//    itself (in-place, out=), a view of the argument's storage (views), or a
//    fresh tensor adopted onto the stand-in (on the CPU when the op's own
//    `device` argument says so, as `.to(kCPU)` does). resize_, set_ and the
//    copies between the devices have kernels of their own (they change or
//    read a storage across devices);
//  - Variable::set_data accepting the stand-in beside the CPU (LibTorch's
//    list of "dense" backends leaves PrivateUse1 out), so Module::to moves a
//    model onto it.
// So the numbers are the CPU kernels' numbers, while every tensor carries
// the device a GPU run would give it: factories with a device, `.to(device)`,
// `options()` and `empty_like` of a stand-in tensor all land on the stand-in,
// and only the host code's own tensors (a `torch::tensor({...})` of flags)
// stay on the CPU. A collective that gets the wrong kind is then visible on
// the CPU. Not the same: the model's CPU-only fast paths (`is_cpu()` checks:
// serial layer norm, packed attention, ...) are not taken on the stand-in,
// so its losses need not equal a CPU run's bit for bit (the tiny model's do);
// structured ops (elementwise, reductions) refuse mixed devices on their own,
// as on a GPU; and every op costs a little more (a few tensor headers).
// Ops that mix stand-in tensors with CPU tensors of more than one element,
// which a GPU refuses for most ops, run as on the CPU and are listed by
// mixedOps() (copies between the devices are not counted).
//
// Thread-safety: the kernels may run on any thread (the autograd engine runs
// the stand-in's backward on a device thread of its own, as it does for
// CUDA). Registration happens once, on first use; it is for the whole
// process.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <string>
#include <vector>

namespace fs::testing {

// standin:0, registered on first use.
c10::Device standInDevice();

// A CPU tensor over the same memory as `t` (same sizes, strides, offset and
// dtype; it does not own the memory: `t` must outlive it). What a test hands
// to code that takes CPU tensors only (a Gloo group).
// REQUIRES: t.device() == standInDevice().
at::Tensor hostViewOf(const at::Tensor& t);

// "aten::index_select (inputs on standin:0 and cpu)", once per op, in order of first use.
std::vector<std::string> mixedOps();

}  // namespace fs::testing
