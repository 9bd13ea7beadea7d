#include "backend/trainer/data_ready_round.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace fs::trainer {

namespace {
// [not ready, world - failed rank, failure length, control flags...]: all max-reduced, so the
// second field picks the lowest failed rank.
constexpr size_t kNotReady = 0, kFailed = 1, kLength = 2, kControl = 3;
}  // namespace

DataRound agreeDataReady(distributed::Communicator& comm, const DataReadiness& mine) {
  const int world = comm.size();
  const bool failed = !mine.failure.empty();
  const size_t length = std::min(mine.failure.size(), kMaxRoundMessage);
  std::vector<int64_t> v(kControl + ControlRequest::kFields, 0);
  v[kNotReady] = mine.ready && !failed ? 0 : 1;
  v[kFailed] = failed ? world - comm.rank() : 0;
  v[kLength] = failed ? static_cast<int64_t>(length) : 0;
  const auto flags = mine.control.flags();
  std::copy(flags.begin(), flags.end(), v.begin() + kControl);
  torch::Tensor t = torch::tensor(v, torch::kInt64);
  comm.allReduce(t, distributed::ReduceOp::kMax, "data ready");
  const int64_t* r = t.data_ptr<int64_t>();

  DataRound round;
  round.allReady = r[kNotReady] == 0;
  round.control = ControlRequest::fromFlags(r + kControl);
  if (r[kFailed] == 0) return round;
  round.failedRank = world - static_cast<int>(r[kFailed]);
  // The longest message of any failed rank sizes the buffer; the failed rank's is zero-padded.
  torch::Tensor text = torch::zeros({std::max<int64_t>(1, r[kLength])}, torch::kByte);
  if (round.failedRank == comm.rank()) std::memcpy(text.data_ptr(), mine.failure.data(), length);
  comm.broadcast(text, round.failedRank, "data ready: the failed rank's message");
  const char* bytes = static_cast<const char*>(text.data_ptr());
  round.failure.assign(bytes, strnlen(bytes, static_cast<size_t>(text.numel())));
  if (round.failure.size() == kMaxRoundMessage) round.failure += " [...]";
  return round;
}

}  // namespace fs::trainer
