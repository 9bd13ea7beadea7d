// Streams and events of one device behind one small interface, so that FSDP
// can run its communication beside the compute on a GPU (NOTE [Streams around
// collectives] in backend/fsdp/sharded_model.h) while the same code runs on the
// CPU.
//
// NOTE [No-op streams]: every device but CUDA gets the no-op implementation:
// work runs in issue order on the calling thread, so there is nothing to order
// and nothing to keep alive. active() is false, current() and communication()
// are the device's default stream (one and the same), events are complete,
// scopes change nothing, and every call is an inline test of a null pointer:
// no allocation, no ATen op, no lock. A CUDA device gets CUDA streams when the
// engine is built with CUDA (FS_WITH_CUDA; device_stream_cuda.cpp, the only
// file with CUDA calls); on a build without CUDA, asking for a CUDA device's
// streams throws a c10::Error naming the device and the build, rather than
// silently running a GPU model without streams that a GPU build would have.
//
// Streams are c10::Stream values (device-generic; on CUDA they wrap a
// c10::cuda::CUDAStream). Ownership: a DeviceStreams owns its communication
// stream's handle (CUDA's pool streams live for the process) and may be moved,
// not copied. Thread-safety: the current stream is per thread (CUDA's rule);
// a DeviceStreams may be used from one thread at a time (FSDP: the rank's
// training thread, or the autograd thread running its hooks while the training
// thread waits in backward).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/Stream.h>

#include <memory>
#include <optional>

namespace fs::runtime {

namespace detail {
// The device-specific half (device_stream_cuda.cpp); absent for the no-op.
class EventImpl {
 public:
  virtual ~EventImpl() = default;
  virtual bool query() const = 0;
  virtual void synchronize() const = 0;
  virtual void block(c10::Stream waiter) const = 0;
};
class StreamsImpl {
 public:
  virtual ~StreamsImpl() = default;
  virtual c10::Stream current() const = 0;
  virtual c10::Stream communication() const = 0;
  virtual c10::Stream exchangeCurrent(c10::Stream s) const = 0;  // returns the one it replaced
  virtual std::shared_ptr<EventImpl> record(c10::Stream s) const = 0;
  virtual void recordTensor(const at::Tensor& t, c10::Stream s) const = 0;
  virtual void synchronize() const = 0;
};
// Null on a build without CUDA.
std::unique_ptr<StreamsImpl> makeCudaStreams(c10::Device device);
}  // namespace detail

// A point in a stream's work. Default-constructed (and every no-op event):
// complete. Copyable; copies share the event.
class DeviceEvent {
 public:
  DeviceEvent() = default;
  // Whether the work before it has finished (never blocks).
  bool query() const { return !impl_ || impl_->query(); }
  // The host waits until the work before it has finished.
  void synchronize() const {
    if (impl_) impl_->synchronize();
  }

 private:
  friend class DeviceStreams;
  explicit DeviceEvent(std::shared_ptr<detail::EventImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<detail::EventImpl> impl_;
};

class DeviceStreams {
 public:
  // CUDA: a communication stream from CUDA's pool for `device` (with an index; cuda alone means the
  // current device). Any other device: the no-op (NOTE [No-op streams]).
  // Throws c10::Error for a CUDA device on a build without CUDA.
  explicit DeviceStreams(c10::Device device);
  ~DeviceStreams();
  DeviceStreams(DeviceStreams&&) noexcept;
  DeviceStreams& operator=(DeviceStreams&&) noexcept;

  c10::Device device() const { return device_; }
  // False for the no-op: nothing runs asynchronously, so callers may skip bookkeeping too.
  bool active() const { return impl_ != nullptr; }
  // The stream the calling thread's work goes to now (CUDA's current stream for the device).
  c10::Stream current() const { return impl_ ? impl_->current() : defaultStream(); }
  // The stream for collectives and the copies and casts around them; the no-op's is current().
  c10::Stream communication() const { return impl_ ? impl_->communication() : defaultStream(); }

  // An event after the work issued to `s` so far.
  DeviceEvent record(c10::Stream s) const { return impl_ ? DeviceEvent(impl_->record(s)) : DeviceEvent(); }
  // Work issued to `waiter` from now on starts after `e` (the host does not wait).
  void wait(c10::Stream waiter, const DeviceEvent& e) const {
    if (impl_ && e.impl_) e.impl_->block(waiter);
  }
  // wait(waiter, record(producer)).
  void waitFor(c10::Stream waiter, c10::Stream producer) const {
    if (impl_ && waiter != producer) wait(waiter, record(producer));
  }
  // `t`'s memory is used by work on `s`: the caching allocator does not hand it out again, once `t`
  // is freed, before the work issued to `s` so far is done. Needed when a tensor allocated while one
  // stream was current is used on another (CUDACachingAllocator::recordStream). No-op for an
  // undefined tensor.
  void recordTensor(const at::Tensor& t, c10::Stream s) const {
    if (impl_ && t.defined()) impl_->recordTensor(t, s);
  }
  // The host waits until the work issued to both streams so far is done.
  void synchronize() const {
    if (impl_) impl_->synchronize();
  }

 private:
  friend class StreamScope;
  c10::Stream defaultStream() const { return c10::Stream(c10::Stream::DEFAULT, device_); }
  c10::Device device_;
  std::unique_ptr<detail::StreamsImpl> impl_;
};

// RAII: `s` is the calling thread's current stream for the device until the
// scope ends, then the one before it again (scopes nest). The no-op's scope
// does nothing.
class StreamScope {
 public:
  StreamScope(const DeviceStreams& streams, c10::Stream s) : impl_(streams.impl_.get()) {
    if (impl_) previous_ = impl_->exchangeCurrent(s);
  }
  ~StreamScope() {
    if (impl_) impl_->exchangeCurrent(*previous_);
  }
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;

 private:
  const detail::StreamsImpl* impl_;
  std::optional<c10::Stream> previous_;
};

}  // namespace fs::runtime
