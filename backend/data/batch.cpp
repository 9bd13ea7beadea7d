#include "backend/data/batch.h"

#include <torch/torch.h>

namespace fs::data {
namespace {
std::string shapeString(torch::IntArrayRef sizes) {
  std::string s = "(";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + ")";
}
}  // namespace

std::optional<DatasetKind> datasetKindFromString(const std::string& type) {
  if (type == "laion") return DatasetKind::kLaion;
  if (type == "mmc4") return DatasetKind::kMmc4;
  return std::nullopt;
}

const char* toString(DatasetKind kind) {
  return kind == DatasetKind::kLaion ? "laion" : "mmc4";
}

const Batch* StepBatches::find(const std::string& dataset) const {
  for (const auto& b : batches) {
    if (b.dataset == dataset) return &b;
  }
  return nullptr;
}

torch::Tensor toDevice(const torch::Tensor& t, torch::Device device) {
  if (!t.defined() || t.device() == device) return t;
  if (device.is_cuda() && t.device().is_cpu()) {
    const torch::Tensor pinned = t.is_pinned() ? t : t.pin_memory();
    return pinned.to(device, /*non_blocking=*/true);
  }
  return t.to(device);
}

Batch toDevice(const Batch& batch, torch::Device device) {
  Batch out = batch;
  out.images = toDevice(batch.images, device);
  out.inputIds = toDevice(batch.inputIds, device);
  out.attentionMask = toDevice(batch.attentionMask, device);
  return out;
}

protocol::Status checkBatch(const Batch& b) {
  auto fail = [&](const std::string& what) {
    return protocol::Status::invalidArgument("batch of dataset '" + b.dataset + "': " + what);
  };
  if (!b.images.defined() || !b.inputIds.defined() || !b.attentionMask.defined()) {
    return fail("images, input_ids and attention_mask must all be set");
  }
  if (b.images.dim() != 6 || b.images.size(2) != 1 || b.images.size(3) != 3) {
    return fail("images must be (B, T_img, 1, 3, H, W), got " + shapeString(b.images.sizes()));
  }
  if (b.images.scalar_type() != torch::kFloat32) return fail("images must be float32");
  if (b.inputIds.dim() != 2 || b.inputIds.scalar_type() != torch::kInt64) {
    return fail("input_ids must be (B, L) int64, got " + shapeString(b.inputIds.sizes()));
  }
  if (b.attentionMask.sizes() != b.inputIds.sizes() || b.attentionMask.scalar_type() != torch::kInt64) {
    return fail("attention_mask must match input_ids' shape and be int64");
  }
  if (b.images.size(0) != b.inputIds.size(0) || b.samples != b.inputIds.size(0)) {
    return fail("images, input_ids and the sample count disagree on B");
  }
  if (b.kind == DatasetKind::kLaion && b.images.size(1) != 1) return fail("LAION batches have T_img = 1");
  return protocol::Status::ok();
}

}  // namespace fs::data
