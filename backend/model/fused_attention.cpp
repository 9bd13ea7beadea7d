#include "backend/model/fused_attention.h"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <atomic>
#include <mutex>
#include <optional>

#include "backend/model/common.h"

namespace fs::model {
namespace {

unsigned kindBit(AttentionKind kind) {
  return 1u << static_cast<unsigned>(kind);
}

// The kinds ScopedSdpaOnCpu sends through SDPA on the CPU (bits of kindBit).
std::atomic<unsigned> sdpaOnCpu{0};

struct CallLog {
  std::atomic<bool> active{false};
  std::mutex mutex;
  std::vector<SdpaCall> calls;
};

CallLog& callLog() {
  static CallLog log;
  return log;
}

// The additive bias in `dtype`, masked entries still finite there.
at::Tensor biasIn(const at::Tensor& bias, c10::ScalarType dtype) {
  if (!bias.defined() || bias.scalar_type() == dtype) return bias;
  return bias.clamp_min(lowestFinite(dtype)).to(dtype);
}

std::optional<at::Tensor> optionalMask(const at::Tensor& mask) {
  return mask.defined() ? std::optional<at::Tensor>(mask) : std::nullopt;
}

at::SDPBackend choose(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask,
                      bool causal, double dropout) {
  return static_cast<at::SDPBackend>(at::_fused_sdp_choice(q, k, v, optionalMask(mask), dropout, causal));
}

}  // namespace

bool runsOnSdpa(AttentionKind kind, const at::Tensor& q) {
  if (q.device().is_cuda()) return true;
  return q.device().is_cpu() && (sdpaOnCpu.load() & kindBit(kind)) != 0;
}

c10::ScalarType sdpaDtype(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  // Autocast casts every floating input but double.
  const auto common = at::promote_types(q.scalar_type(), at::promote_types(k.scalar_type(), v.scalar_type()));
  const auto device = q.device().type();
  if (common != at::kDouble && at::autocast::is_autocast_enabled(device))
    return at::autocast::get_autocast_dtype(device);
  return common;
}

at::Tensor sdpaAttention(AttentionKind kind, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         const at::Tensor& bias, bool causal, double scale, double dropout) {
  TORCH_CHECK(!(causal && bias.defined()), "sdpaAttention: a causal call takes no bias (the mask is causal)");
  TORCH_CHECK(!bias.defined() || !bias.requires_grad(), "sdpaAttention: the bias must not require grad");
  const auto dtype = sdpaDtype(q, k, v);
  const auto qc = q.to(dtype);
  const auto kc = k.to(dtype);
  const auto vc = v.to(dtype);
  const auto mask = biasIn(bias, dtype);
  auto& log = callLog();
  if (log.active.load()) {
    const auto backend = choose(qc, kc, vc, mask, causal, dropout);
    std::lock_guard<std::mutex> lock(log.mutex);
    log.calls.push_back({kind, backend, causal, mask.defined()});
  }
  return at::scaled_dot_product_attention(qc, kc, vc, optionalMask(mask), dropout, causal, scale);
}

at::SDPBackend sdpaBackend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const at::Tensor& bias, bool causal, double dropout) {
  const auto dtype = sdpaDtype(q, k, v);
  return choose(q.to(dtype), k.to(dtype), v.to(dtype), biasIn(bias, dtype), causal, dropout);
}

// ---------------------------------------------------------------- tests only

ScopedSdpaOnCpu::ScopedSdpaOnCpu(const std::vector<AttentionKind>& kinds) {
  unsigned bits = 0;
  for (const auto kind : kinds) bits |= kindBit(kind);
  previous_ = sdpaOnCpu.exchange(bits);
}

ScopedSdpaOnCpu::~ScopedSdpaOnCpu() {
  sdpaOnCpu.store(previous_);
}

ScopedSdpaLog::ScopedSdpaLog() {
  auto& log = callLog();
  std::lock_guard<std::mutex> lock(log.mutex);
  log.calls.clear();
  log.active.store(true);
}

ScopedSdpaLog::~ScopedSdpaLog() {
  auto& log = callLog();
  log.active.store(false);
  std::lock_guard<std::mutex> lock(log.mutex);
  log.calls.clear();
}

std::vector<SdpaCall> ScopedSdpaLog::calls() const {
  auto& log = callLog();
  std::lock_guard<std::mutex> lock(log.mutex);
  return log.calls;
}

}  // namespace fs::model
