#include "backend/runtime/device_stream.h"

#include <c10/util/Exception.h>

namespace fs::runtime {

DeviceStreams::DeviceStreams(c10::Device device) : device_(device) {
  if (!device_.is_cuda()) return;  // NOTE [No-op streams]
  impl_ = detail::makeCudaStreams(device_);
  TORCH_CHECK(impl_, "DeviceStreams: ", device_.str(),
              " needs an engine built with CUDA (FS_WITH_CUDA); this one was built without it");
}

DeviceStreams::~DeviceStreams() = default;
DeviceStreams::DeviceStreams(DeviceStreams&&) noexcept = default;
DeviceStreams& DeviceStreams::operator=(DeviceStreams&&) noexcept = default;

}  // namespace fs::runtime
