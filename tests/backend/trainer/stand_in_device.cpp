#include "tests/backend/trainer/stand_in_device.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <set>
#include <unordered_map>

namespace fs::testing {
namespace {

constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;
constexpr c10::DispatchKey kKey = c10::DispatchKey::PrivateUse1;
const c10::Device kDevice(kType, 0);

// The CPU's memory, marked as the stand-in's.
class StandInAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) override {
    c10::DataPtr p = c10::GetCPUAllocator()->allocate(n);
    p.unsafe_set_device(kDevice);
    return p;
  }
  c10::DeleterFnPtr raw_deleter() const override { return c10::GetCPUAllocator()->raw_deleter(); }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};

StandInAllocator& allocator() {
  static StandInAllocator* const a = new StandInAllocator;
  return *a;
}

// One device, one stream; work is done when the kernel returns, so events are complete at once.
class StandInGuard final : public c10::impl::DeviceGuardImplInterface {
 public:
  c10::DeviceType type() const override { return kType; }
  c10::Device exchangeDevice(c10::Device) const override { return kDevice; }
  c10::Device getDevice() const override { return kDevice; }
  void setDevice(c10::Device) const override {}
  void uncheckedSetDevice(c10::Device) const noexcept override {}
  c10::Stream getStream(c10::Device d) const override { return c10::Stream(c10::Stream::DEFAULT, d); }
  c10::Stream exchangeStream(c10::Stream s) const override {
    return c10::Stream(c10::Stream::DEFAULT, s.device());
  }
  c10::DeviceIndex deviceCount() const noexcept override { return 1; }
  void record(void**, const c10::Stream&, const c10::DeviceIndex, const c10::EventFlag) const override {}
  void block(void*, const c10::Stream&) const override {}
  bool queryEvent(void*) const override { return true; }
  bool queryStream(const c10::Stream&) const override { return true; }
  void synchronizeStream(const c10::Stream&) const override {}
  void synchronizeEvent(void*) const override {}
  void synchronizeDevice(const c10::DeviceIndex) const override {}
  void recordDataPtrOnStream(const c10::DataPtr&, const c10::Stream&) const override {}
};

// The accelerator's hooks: one device, always there, nothing to initialise. Its generator is the CPU's (the
// fallback runs random ops with the CPU's default generator anyway).
class StandInHooks final : public at::PrivateUse1HooksInterface {
 public:
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  void init() const override {}
  c10::DeviceIndex deviceCount() const override { return 1; }
  void setCurrentDevice(c10::DeviceIndex) const override {}
  c10::DeviceIndex getCurrentDevice() const override { return 0; }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex) const override { return 0; }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex) const override { return 0; }
  bool isPinnedPtr(const void*) const override { return false; }
  c10::Allocator* getPinnedMemoryAllocator() const override { return c10::GetCPUAllocator(); }
  c10::Device getDeviceFromPtr(void*) const override { return kDevice; }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex) const override {
    return at::detail::getDefaultCPUGenerator();
  }
};

// Variable::set_data (Module::to) moves a parameter between devices only when both are "dense" backends, a
// list without PrivateUse1: the stand-in and the CPU count as dense here too.
bool compatibleShallowCopyType(const at::Tensor& self, const at::Tensor& from) {
  const auto dense = [](const at::Tensor& t) {
    return t.layout() == c10::kStrided && (t.device().is_cpu() || t.device().type() == kType);
  };
  return (dense(self) && dense(from)) ||
         self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set());
}

struct Mixed {
  std::mutex mu;
  std::vector<std::string> ops;
  std::set<std::string> seen;
};
Mixed& mixed() {
  static Mixed* const m = new Mixed;
  return *m;
}

at::Tensor onStandIn(c10::Storage storage, const at::Tensor& like) {
  at::Tensor t =
      at::detail::make_tensor<c10::TensorImpl>(std::move(storage), c10::DispatchKeySet(kKey), like.dtype());
  t.unsafeGetTensorImpl()->set_sizes_and_strides(like.sizes(), like.strides(), like.storage_offset());
  return t;
}

// A CPU storage over `s`'s memory (not owning it). `resizable`: a CPU kernel may grow it (an out= argument of
// the wrong size), which gives it memory of its own: Loan::settle hands that to `s`.
c10::Storage hostStorageOver(const c10::Storage& s, bool resizable = false) {
  return c10::Storage(c10::Storage::use_byte_size_t(), s.nbytes(),
                      c10::DataPtr(const_cast<void*>(s.data()), c10::Device(c10::kCPU)),
                      resizable ? c10::GetCPUAllocator() : nullptr, resizable);
}

at::Tensor hostTensorOver(c10::Storage storage, const at::Tensor& like) {
  at::Tensor t = at::detail::make_tensor<c10::TensorImpl>(
      std::move(storage), c10::DispatchKeySet(c10::DispatchKey::CPU), like.dtype());
  t.unsafeGetTensorImpl()->set_sizes_and_strides(like.sizes(), like.strides(), like.storage_offset());
  return t;
}

// One op's stand-in arguments lent to the CPU kernel as CPU tensors over the same memory, and what the kernel
// returns mapped back.
class Loan {
 public:
  at::Tensor lend(const at::Tensor& t) {
    if (!t.defined() || !t.has_storage()) return t;
    if (t.device().type() != kType) {
      cpuStorages_.insert(t.storage().unsafeGetStorageImpl());
      if (t.device().is_cpu() && t.numel() > 1) cpuOperand_ = true;
      return t;
    }
    sawStandIn_ = true;
    if (auto it = lentTensor_.find(t.unsafeGetTensorImpl()); it != lentTensor_.end()) return it->second;
    c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
    auto it = lentStorage_.find(s);
    if (it == lentStorage_.end()) {
      it = lentStorage_.emplace(s, hostStorageOver(t.storage(), /*resizable=*/true)).first;
      original_.emplace(it->second.unsafeGetStorageImpl(), t.storage());
    }
    at::Tensor host = hostTensorOver(it->second, t);
    lentTensor_.emplace(t.unsafeGetTensorImpl(), host);
    returned_.emplace(host.unsafeGetTensorImpl(), t);
    return host;
  }

  void lend(c10::IValue& v) {
    if (v.isTensor()) {
      v = lend(v.toTensor());
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> out;
      for (const at::Tensor& t : v.toTensorList().vec()) out.push_back(lend(t));
      v = out;
    } else if (v.isList()) {
      const auto elems = v.toListRef();
      if (std::none_of(elems.begin(), elems.end(), [](const c10::IValue& e) { return e.isTensor(); })) return;
      c10::List<std::optional<at::Tensor>> out;
      for (const c10::IValue& e : elems) {
        out.push_back(e.isTensor() ? std::optional<at::Tensor>(lend(e.toTensor())) : std::nullopt);
      }
      v = out;
    }
  }

  // The op's own `device` argument decides where fresh results go; otherwise the stand-in, if any input was
  // on it.
  void setDevice(c10::IValue& v) {
    if (!v.isDevice()) return;
    explicitDevice_ = true;
    resultsOnStandIn_ = v.toDevice().type() == kType;
    if (resultsOnStandIn_) v = c10::IValue(c10::Device(c10::kCPU));
  }

  void prepareReturns(const std::vector<c10::IValue>& returns) {
    for (const c10::IValue& v : returns) {
      forEachTensor(v, [&](const at::Tensor& t) {
        if (t.defined() && t.has_storage())
          refs_[t.storage().unsafeGetStorageImpl()].insert(t.unsafeGetTensorImpl());
      });
    }
  }

  c10::IValue giveBack(const c10::IValue& v) {
    if (v.isTensor()) return giveBack(v.toTensor());
    if (v.isTensorList()) {
      c10::List<at::Tensor> out;
      for (const at::Tensor& t : v.toTensorList().vec()) out.push_back(giveBack(t));
      return out;
    }
    return v;
  }

  bool mixedDevices() const { return sawStandIn_ && cpuOperand_; }

  // After the CPU kernel: what it resized (out= arguments) onto the stand-in tensors they stand for.
  void settle() {
    for (auto& [standIn, host] : lentStorage_) {
      c10::StorageImpl* h = host.unsafeGetStorageImpl();
      if (h->data() == standIn->data() && h->nbytes() == standIn->nbytes()) continue;
      c10::DataPtr grown = h->set_data_ptr(c10::DataPtr(nullptr, c10::Device(c10::kCPU)));
      grown.unsafe_set_device(kDevice);
      standIn->set_data_ptr_noswap(std::move(grown));
      standIn->set_nbytes(h->nbytes());
      h->set_nbytes(0);
    }
    for (auto& [standIn, host] : lentTensor_) {
      if (standIn->sizes() == host.sizes() && standIn->strides() == host.strides() &&
          standIn->storage_offset() == host.storage_offset())
        continue;
      standIn->set_sizes_and_strides(host.sizes(), host.strides(), host.storage_offset());
    }
  }

 private:
  template <class F>
  static void forEachTensor(const c10::IValue& v, F&& f) {
    if (v.isTensor()) f(v.toTensor());
    if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorList().vec()) f(t);
    }
  }

  at::Tensor giveBack(const at::Tensor& t) {
    if (!t.defined() || !t.has_storage()) return t;
    if (auto it = returned_.find(t.unsafeGetTensorImpl()); it != returned_.end()) return it->second;
    c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
    if (auto it = original_.find(s); it != original_.end()) return onStandIn(it->second, t);  // a view
    if (cpuStorages_.count(s)) return t;
    const bool toStandIn = explicitDevice_ ? resultsOnStandIn_ : sawStandIn_;
    if (!toStandIn || t.device().type() == kType) return t;
    auto it = adopted_.find(s);
    if (it == adopted_.end()) it = adopted_.emplace(s, adopt(t.storage(), refs_[s].size())).first;
    return onStandIn(it->second, t);
  }

  // A fresh CPU result's storage moved (or, when something else holds it too, copied) onto the stand-in.
  static c10::Storage adopt(const c10::Storage& cpu, size_t refsInResults) {
    c10::StorageImpl* impl = cpu.unsafeGetStorageImpl();
    const size_t nbytes = cpu.nbytes();
    c10::DataPtr data;
    if (static_cast<size_t>(cpu.use_count()) <= refsInResults) {  // only the results hold it
      data = impl->set_data_ptr(c10::DataPtr(nullptr, c10::Device(c10::kCPU)));
      impl->set_nbytes(0);
      data.unsafe_set_device(kDevice);
    } else {
      data = allocator().allocate(nbytes);
      if (nbytes > 0) std::memcpy(data.get(), cpu.data(), nbytes);
    }
    return c10::Storage(c10::Storage::use_byte_size_t(), nbytes, std::move(data), &allocator(),
                        /*resizable=*/true);
  }

  std::unordered_map<c10::TensorImpl*, at::Tensor> lentTensor_;  // stand-in tensor -> its CPU view
  std::unordered_map<c10::TensorImpl*, at::Tensor> returned_;    // CPU view -> the stand-in tensor
  std::unordered_map<c10::StorageImpl*, c10::Storage>
      lentStorage_;                                               // stand-in storage -> CPU storage over it
  std::unordered_map<c10::StorageImpl*, c10::Storage> original_;  // CPU storage over -> the stand-in's
  std::unordered_map<c10::StorageImpl*, c10::Storage>
      adopted_;  // fresh CPU result storage -> on the stand-in
  std::unordered_map<c10::StorageImpl*, std::set<c10::TensorImpl*>> refs_;
  std::set<c10::StorageImpl*> cpuStorages_;
  bool sawStandIn_ = false, cpuOperand_ = false;
  bool explicitDevice_ = false, resultsOnStandIn_ = false;
};

// A boxed int or SymInt list (resize_ and set_ take SymInt[]), concrete here.
std::vector<int64_t> intsOf(const c10::IValue& v) {
  if (v.isIntList()) return v.toIntVector();
  std::vector<int64_t> out;
  for (const c10::IValue& e : v.toListRef())
    out.push_back(e.isSymInt() ? e.toSymInt().expect_int() : e.toInt());
  return out;
}

int64_t intOf(const c10::IValue& v) {
  return v.isSymInt() ? v.toSymInt().expect_int() : v.toInt();
}

std::vector<int64_t> contiguousStrides(c10::IntArrayRef sizes) {
  std::vector<int64_t> strides(sizes.size());
  int64_t s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = s;
    s *= std::max<int64_t>(sizes[i], 1);
  }
  return strides;
}

// Copies between the stand-in and the CPU (copy_'s generic kernel hands them to _copy_from, which has no CPU
// kernel): a CPU copy between CPU views.
bool copyOp(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& name = op.schema().operator_name().name;
  if (name != "aten::_copy_from" && name != "aten::_copy_from_and_resize") return false;
  const size_t n = op.schema().arguments().size();
  const size_t base = stack->size() - n;
  const at::Tensor src = (*stack)[base].toTensor();
  at::Tensor dst = (*stack)[base + 1].toTensor();
  const bool nonBlocking = n > 2 && (*stack)[base + 2].toBool();
  if (name == "aten::_copy_from_and_resize") dst.resize_(src.sizes());
  const auto host = [](const at::Tensor& t) { return t.device().type() == kType ? hostViewOf(t) : t; };
  host(dst).copy_(host(src), nonBlocking);
  torch::jit::drop(*stack, n);
  stack->emplace_back(dst);
  return true;
}

// resize_ and set_ change which memory a tensor uses: done here on the stand-in's own storage.
bool storageOp(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& name = op.schema().operator_name();
  if (name.name != "aten::resize_" && name.name != "aten::set_") return false;
  const size_t n = op.schema().arguments().size();
  const size_t base = stack->size() - n;
  at::Tensor self = (*stack)[base].toTensor();
  c10::TensorImpl* impl = self.unsafeGetTensorImpl();
  if (name.name == "aten::resize_") {
    const std::vector<int64_t> sizes = intsOf((*stack)[base + 1]);
    impl->set_sizes_contiguous(sizes);
    const size_t needed =
        self.numel() == 0 ? 0
                          : static_cast<size_t>(self.storage_offset() + self.numel()) * self.element_size();
    c10::StorageImpl* s = self.storage().unsafeGetStorageImpl();
    if (s->nbytes() < needed) {
      c10::DataPtr fresh = allocator().allocate(needed);
      if (s->nbytes() > 0) std::memcpy(fresh.get(), s->data(), s->nbytes());
      s->set_data_ptr_noswap(std::move(fresh));
      s->set_nbytes(needed);
    }
  } else if (name.overload_name == "source_Storage_storage_offset" ||
             name.overload_name == "source_Storage") {
    c10::Storage source = (*stack)[base + 1].toStorage();
    const int64_t offset = name.overload_name == "source_Storage" ? 0 : intOf((*stack)[base + 2]);
    std::vector<int64_t> sizes, strides;
    if (name.overload_name == "source_Storage") {
      sizes = {static_cast<int64_t>(source.nbytes() / self.element_size())};
    } else {
      sizes = intsOf((*stack)[base + 3]);
      strides = intsOf((*stack)[base + 4]);
    }
    if (strides.empty()) strides = contiguousStrides(sizes);
    impl->set_storage_keep_dtype(std::move(source));
    impl->set_sizes_and_strides(sizes, strides, offset);
  } else if (name.overload_name == "source_Tensor") {
    const at::Tensor source = (*stack)[base + 1].toTensor();
    impl->set_storage_keep_dtype(source.storage());
    impl->set_sizes_and_strides(source.sizes(), source.strides(), source.storage_offset());
  } else {
    TORCH_CHECK(false, "stand-in device: ", name.name, ".", name.overload_name, " has no kernel");
  }
  torch::jit::drop(*stack, n);
  stack->emplace_back(self);
  return true;
}

// The CPU kernel of `op` on the lent arguments. Convolutions on devices other than the CPU and CUDA go to the
// *_overrideable ops, which have no CPU kernel: they run as the CPU's convolution and its backward.
void runOnCpu(const c10::OperatorHandle& op, torch::jit::Stack* stack, size_t base) {
  const std::string& name = op.schema().operator_name().name;
  auto& dispatcher = c10::Dispatcher::singleton();
  if (name == "aten::convolution_overrideable") {
    dispatcher.findSchemaOrThrow("aten::convolution", "").callBoxed(stack);
  } else if (name == "aten::convolution_backward_overrideable") {
    // convolution_backward takes the bias's sizes after the weight: its grad_bias has the output channels.
    const at::Tensor weight = (*stack)[base + 2].toTensor();
    const bool transposed = (*stack)[base + 6].toBool();
    const int64_t groups = intOf((*stack)[base + 8]);
    const bool wantBias = (*stack)[base + 9].toBoolList().get(2);
    const int64_t channels = transposed ? weight.size(1) * groups : weight.size(0);
    stack->insert(stack->begin() + static_cast<std::ptrdiff_t>(base + 3),
                  wantBias ? c10::IValue(std::vector<int64_t>{channels}) : c10::IValue());
    dispatcher.findSchemaOrThrow("aten::convolution_backward", "").callBoxed(stack);
  } else {
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
  }
}

void standInFallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  if (storageOp(op, stack) || copyOp(op, stack)) return;
  const auto& schema = op.schema();
  const auto& args = schema.arguments();
  const size_t base = stack->size() - args.size();
  Loan loan;
  for (size_t i = 0; i < args.size(); ++i) {
    c10::IValue& v = (*stack)[base + i];
    if (args[i].name() == "device") {
      loan.setDevice(v);
    } else {
      loan.lend(v);
    }
  }
  const std::string& opName = schema.operator_name().name;
  if (loan.mixedDevices() && opName != "aten::copy_" && opName != "aten::_to_copy") {
    Mixed& m = mixed();
    std::lock_guard<std::mutex> lock(m.mu);
    if (m.seen.insert(opName).second) m.ops.push_back(opName + " (inputs on " + kDevice.str() + " and cpu)");
  }
  try {
    runOnCpu(op, stack, base);
  } catch (const c10::Error& e) {
    TORCH_CHECK(false, "stand-in device: ", opName, " on the CPU: ", e.what_without_backtrace());
  }
  loan.settle();
  const size_t returns = schema.returns().size();
  const size_t at = stack->size() - returns;
  loan.prepareReturns(
      std::vector<c10::IValue>(stack->begin() + static_cast<std::ptrdiff_t>(at), stack->end()));
  for (size_t i = at; i < stack->size(); ++i) (*stack)[i] = loan.giveBack((*stack)[i]);
}

void registerOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Registered, PrivateUse1 is the process's accelerator (at::getAccelerator) ahead of CUDA, whose streams
    // the autograd engine would otherwise ask for on a machine without a GPU.
    c10::register_privateuse1_backend("standin");
    at::RegisterPrivateUse1HooksInterface(new StandInHooks);
    static c10::impl::DeviceGuardImplRegistrar guard(kType, new StandInGuard);
    c10::SetAllocator(kType, &allocator());
    static torch::Library fallback(torch::Library::IMPL, "_", kKey, __FILE__, __LINE__);
    fallback.fallback(torch::CppFunction::makeFromBoxedFunction<&standInFallback>());
    // The *_overrideable convolutions have a generic kernel that throws; the stand-in's own comes first.
    // set_data's check of the two devices (above) sits where the autograd key dispatches it.
    static torch::Library kernels(torch::Library::IMPL, "aten", kKey, __FILE__, __LINE__);
    for (const char* op : {"convolution_overrideable", "convolution_backward_overrideable"})
      kernels.impl(op, torch::CppFunction::makeFromBoxedFunction<&standInFallback>());
    kernels.impl("_has_compatible_shallow_copy_type", TORCH_FN(compatibleShallowCopyType));
    static torch::Library autograd(torch::Library::IMPL, "aten", c10::DispatchKey::AutogradPrivateUse1,
                                   __FILE__, __LINE__);
    autograd.impl("_has_compatible_shallow_copy_type", TORCH_FN(compatibleShallowCopyType));
  });
}

}  // namespace

c10::Device standInDevice() {
  registerOnce();
  return kDevice;
}

at::Tensor hostViewOf(const at::Tensor& t) {
  TORCH_CHECK(t.device().type() == kType, "hostViewOf: a tensor on ", t.device(), ", not the stand-in");
  return hostTensorOver(hostStorageOver(t.storage()), t);
}

std::vector<std::string> mixedOps() {
  Mixed& m = mixed();
  std::lock_guard<std::mutex> lock(m.mu);
  return m.ops;
}

}  // namespace fs::testing
