// The CUDA half of DeviceStreams (device_stream.h): the only file with CUDA
// calls. A build without FS_WITH_CUDA has no CUDA streams to make:
// makeCudaStreams returns null there, and DeviceStreams refuses a CUDA device
// naming the build (NOTE [No-op streams]). Every call
// used here exists with the same signature in LibTorch 1.13 and 2.x:
// c10::cuda::getStreamFromPool(bool, DeviceIndex), getCurrentCUDAStream,
// setCurrentCUDAStream, CUDAStream::synchronize, at::cuda::CUDAEvent
// (record / block / query / synchronize) and
// c10::cuda::CUDACachingAllocator::recordStream(const DataPtr&, CUDAStream)
// (compat: a C10_CUDA_API function in 1.13, an inline forwarding to the
// allocator object in 2.x; the call reads the same). DeviceIndex is int8_t in
// 1.13 and int16_t from 2.2; only Device::index() values pass through here.
#include "backend/runtime/device_stream.h"

#ifdef FS_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace fs::runtime::detail {

#ifdef FS_WITH_CUDA
namespace {

class CudaEvent final : public EventImpl {
 public:
  explicit CudaEvent(const c10::cuda::CUDAStream& s) { event_.record(s); }
  bool query() const override { return event_.query(); }
  void synchronize() const override { event_.synchronize(); }
  void block(c10::Stream waiter) const override { event_.block(c10::cuda::CUDAStream(waiter)); }

 private:
  // Mutable: CUDAEvent::block is not const, though it changes the waiting stream, not the event.
  mutable at::cuda::CUDAEvent event_;  // default flags: no timing, the cheapest to record
};

class CudaStreams final : public StreamsImpl {
 public:
  explicit CudaStreams(c10::Device device)
      : index_(device.has_index() ? device.index() : c10::cuda::current_device()),
        comm_(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index_)) {}
  c10::Stream current() const override { return c10::cuda::getCurrentCUDAStream(index_).unwrap(); }
  c10::Stream communication() const override { return comm_.unwrap(); }
  // What CUDAStreamGuard does for one device, without moving the current device.
  c10::Stream exchangeCurrent(c10::Stream s) const override {
    const c10::Stream before = current();
    c10::cuda::setCurrentCUDAStream(c10::cuda::CUDAStream(s));
    return before;
  }
  std::shared_ptr<EventImpl> record(c10::Stream s) const override {
    return std::make_shared<CudaEvent>(c10::cuda::CUDAStream(s));
  }
  void recordTensor(const at::Tensor& t, c10::Stream s) const override {
    if (!t.is_cuda()) return;  // host memory (an offloaded shard) is not the caching allocator's
    c10::cuda::CUDACachingAllocator::recordStream(t.storage().data_ptr(), c10::cuda::CUDAStream(s));
  }
  void synchronize() const override {
    c10::cuda::getCurrentCUDAStream(index_).synchronize();
    comm_.synchronize();
  }

 private:
  c10::DeviceIndex index_;
  c10::cuda::CUDAStream comm_;
};

}  // namespace

std::unique_ptr<StreamsImpl> makeCudaStreams(c10::Device device) {
  return std::make_unique<CudaStreams>(device);
}
#else
std::unique_ptr<StreamsImpl> makeCudaStreams(c10::Device) {
  return nullptr;
}
#endif

}  // namespace fs::runtime::detail
