#include "bench/fsdp/full_batches.h"

#include <torch/torch.h>

#include <utility>

#include "backend/model/common.h"

namespace fs::bench {
namespace {

class FullBatchSource final : public data::DataSource {
 public:
  FullBatchSource(std::unique_ptr<data::DataSource> inner, const protocol::TokensConfig& tokens,
                  int64_t textId, int64_t width)
      : inner_(std::move(inner)), pad_(tokens.pad_id), textId_(textId), width_(width) {}

  protocol::StatusOr<std::optional<data::StepBatches>> next() override {
    auto step = inner_->next();
    if (!step || !step.value()) return step;
    data::StepBatches s = std::move(*step.value());
    for (size_t i = 0; i < s.batches.size(); ++i) fill(s.batches[i], inner_->datasets().at(i).maxTokens);
    return std::optional<data::StepBatches>(std::move(s));
  }
  void setEpoch(int64_t epoch) override { inner_->setEpoch(epoch); }
  int64_t epoch() const override { return inner_->epoch(); }
  int64_t stepsPerEpoch() const override { return inner_->stepsPerEpoch(); }
  const std::vector<data::DatasetInfo>& datasets() const override { return inner_->datasets(); }
  data::DataPosition position() const override { return inner_->position(); }
  protocol::Status restore(const data::DataPosition& p) override { return inner_->restore(p); }

 private:
  void fill(data::Batch& b, int64_t maxTokens) const {
    const int64_t rows = b.inputIds.size(0), width = b.inputIds.size(1);
    torch::Tensor ids = torch::full({rows, std::max(width, maxTokens)}, textId_, torch::kInt64);
    // Keep what the source wrote where it was real; padding and the extension become text.
    const torch::Tensor real = b.attentionMask.ne(0);
    ids.narrow(1, 0, width).copy_(torch::where(real, b.inputIds, torch::full_like(b.inputIds, textId_)));
    const int64_t k = fewestSkipped(ids);
    b.inputIds = padded(ids, k, pad_);
    b.attentionMask = padded(torch::ones_like(ids), k, 0);
    b.tokens = ids.numel() - k;
  }
  // `x` with its last k positions (in row-major order: the ends of the last rows) set to `value`.
  static torch::Tensor padded(const torch::Tensor& x, int64_t k, int64_t value) {
    torch::Tensor y = x.clone();
    y.view({-1}).narrow(0, x.numel() - k, k).fill_(value);
    return y;
  }
  // The fewest padding positions with which the model skips padding (model::paddingFor, whose
  // saving grows with the count); 0 when no count does.
  int64_t fewestSkipped(const torch::Tensor& ids) const {
    const int64_t n = ids.numel();
    auto skips = [&](int64_t k) {
      return model::paddingFor(padded(ids, k, pad_), padded(torch::ones_like(ids), k, 0), pad_, width_) ==
             model::Padding::kSkip;
    };
    if (n < 2 || !skips(n - 1)) return 0;
    int64_t lo = 0, hi = n - 1;  // lo does not skip, hi does
    while (hi - lo > 1) {
      const int64_t mid = (lo + hi) / 2;
      (skips(mid) ? hi : lo) = mid;
    }
    return hi;
  }

  std::unique_ptr<data::DataSource> inner_;
  int64_t pad_;
  int64_t textId_;
  int64_t width_;  // the LM's width: the model's skipping rule depends on it
};

}  // namespace

std::unique_ptr<data::DataSource> fullBatches(std::unique_ptr<data::DataSource> inner,
                                              const protocol::TokensConfig& tokens, int64_t lmWidth) {
  int64_t id = 0;  // the smallest id that is no special token
  while (id == tokens.pad_id || id == tokens.eos_id || id == tokens.image_id || id == tokens.endofchunk_id)
    ++id;
  return std::make_unique<FullBatchSource>(std::move(inner), tokens, id, lmWidth);
}

}  // namespace fs::bench
