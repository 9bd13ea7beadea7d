#include "backend/protocol/status.h"

namespace fs::protocol {

std::string Status::toString() const {
  switch (code_) {
    case Code::kOk:
      return "OK";
    case Code::kInvalidArgument:
      return "InvalidArgument: " + message_;
    case Code::kNotFound:
      return "NotFound: " + message_;
    case Code::kCorruption:
      return "Corruption: " + message_;
    case Code::kIOError:
      return "IOError: " + message_;
    case Code::kUnsupported:
      return "Unsupported: " + message_;
    case Code::kCancelled:
      return "Cancelled: " + message_;
  }
  return message_;
}

}  // namespace fs::protocol
