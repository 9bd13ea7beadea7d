#include "backend/step/labels.h"

#include <torch/torch.h>

namespace fs::step {
namespace {
void checkIds(const torch::Tensor& ids) {
  TORCH_CHECK(ids.dim() == 2 && ids.scalar_type() == torch::kInt64,
              "labels: input_ids must be (B, L) int64, got ", ids.sizes(), " ", ids.scalar_type());
}
}  // namespace

torch::Tensor laionLabels(const torch::Tensor& inputIds, const data::SpecialTokenIds& t) {
  checkIds(inputIds);
  auto labels = inputIds.clone();
  labels.masked_fill_(inputIds.eq(t.pad), kIgnoreIndex);
  labels.masked_fill_(inputIds.eq(t.image), kIgnoreIndex);
  return labels;
}

torch::Tensor mmc4Labels(const torch::Tensor& inputIds, const data::SpecialTokenIds& t) {
  checkIds(inputIds);
  // Row-wise scans; sequences are short (<= a few thousand), so a CPU pass.
  auto labels = inputIds.to(torch::kCPU).clone().contiguous();
  const int64_t B = labels.size(0), L = labels.size(1);
  auto lab = labels.accessor<int64_t, 2>();
  std::vector<int64_t> eocs;
  for (int64_t r = 0; r < B; ++r) {
    for (int64_t i = 0; i < L; ++i) {
      if (lab[r][i] == t.pad) lab[r][i] = kIgnoreIndex;
    }
    int64_t i = 0;
    for (; i < L && lab[r][i] != t.image; ++i) lab[r][i] = kIgnoreIndex;
    // <|endofchunk|> positions after the masked prefix, found before masking
    // their runs (as the reference collects them first).
    eocs.clear();
    for (; i < L; ++i) {
      if (lab[r][i] == t.endofchunk) eocs.push_back(i);
    }
    for (int64_t e : eocs) {
      for (int64_t j = e + 1; j < L && lab[r][j] != t.image; ++j) lab[r][j] = kIgnoreIndex;
    }
    for (int64_t j = 0; j < L; ++j) {
      if (lab[r][j] == t.image) lab[r][j] = kIgnoreIndex;
    }
  }
  return labels.to(inputIds.device());
}

torch::Tensor makeLabels(data::DatasetKind kind, const torch::Tensor& inputIds,
                         const data::SpecialTokenIds& t) {
  return kind == data::DatasetKind::kLaion ? laionLabels(inputIds, t) : mmc4Labels(inputIds, t);
}

LabelStats labelStats(const torch::Tensor& labels) {
  TORCH_CHECK(labels.dim() == 2, "labelStats: labels must be (B, L), got ", labels.sizes());
  LabelStats s;
  s.samples = labels.size(0);
  if (labels.size(1) < 2 || s.samples == 0) {
    s.samplesWithoutTargets = s.samples;
    return s;
  }
  const auto targets = labels.slice(1, 1).ne(kIgnoreIndex);
  const auto perRow = targets.sum(1).to(torch::kCPU);
  s.targets = perRow.sum().item<int64_t>();
  s.samplesWithoutTargets = perRow.eq(0).sum().item<int64_t>();
  return s;
}

int64_t countTargets(const torch::Tensor& labels) {
  TORCH_CHECK(labels.dim() == 2 && labels.scalar_type() == torch::kInt64 && labels.device().is_cpu(),
              "countTargets: labels must be (B, L) int64 on the CPU, got ", labels.sizes(), " ",
              labels.scalar_type(), " on ", labels.device());
  const int64_t B = labels.size(0), L = labels.size(1);
  const int64_t s0 = labels.stride(0), s1 = labels.stride(1);
  const int64_t* p = labels.data_ptr<int64_t>();
  int64_t n = 0;
  for (int64_t r = 0; r < B; ++r) {
    for (int64_t i = 1; i < L; ++i) n += p[r * s0 + i * s1] != kIgnoreIndex;
  }
  return n;
}

Targets targetsOf(const torch::Tensor& labels) {
  TORCH_CHECK(labels.dim() == 2 && labels.scalar_type() == torch::kInt64 && labels.device().is_cpu(),
              "targetsOf: labels must be (B, L) int64 on the CPU, got ", labels.sizes(), " ",
              labels.scalar_type(), " on ", labels.device());
  const int64_t n = countTargets(labels);
  const int64_t B = labels.size(0), L = labels.size(1);
  const int64_t s0 = labels.stride(0), s1 = labels.stride(1);
  const int64_t* p = labels.data_ptr<int64_t>();
  Targets out{torch::empty({n}, torch::kLong), torch::empty({n}, torch::kLong)};
  int64_t* position = out.positions.data_ptr<int64_t>();
  int64_t* label = out.labels.data_ptr<int64_t>();
  for (int64_t r = 0; r < B; ++r) {
    for (int64_t i = 1; i < L; ++i) {
      const int64_t value = p[r * s0 + i * s1];
      if (value == kIgnoreIndex) continue;
      *position++ = r * L + i - 1;
      *label++ = value;
    }
  }
  return out;
}

torch::Tensor deadPositions(const torch::Tensor& labels) {
  TORCH_CHECK(labels.dim() == 2 && labels.scalar_type() == torch::kInt64 && labels.device().is_cpu(),
              "deadPositions: labels must be (B, L) int64 on the CPU, got ", labels.sizes(), " ",
              labels.scalar_type(), " on ", labels.device());
  const int64_t B = labels.size(0), L = labels.size(1);
  const int64_t s0 = labels.stride(0), s1 = labels.stride(1);
  const int64_t* p = labels.data_ptr<int64_t>();
  auto dead = torch::zeros({B, L}, torch::kBool);
  bool* d = dead.data_ptr<bool>();
  for (int64_t r = 0; r < B; ++r) {
    int64_t last = L - 1;
    while (last > 0 && p[r * s0 + last * s1] == kIgnoreIndex) --last;
    if (last == 0) continue;  // no target: label 0 is never one
    for (int64_t i = last; i < L; ++i) d[r * L + i] = true;
  }
  return dead;
}

}  // namespace fs::step
