#include "backend/model/slot_attention.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "backend/model/intra_op.h"
#include "backend/model/row_major_gemm.h"

namespace fs::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

std::vector<int64_t> flattenRuns(const std::vector<SlotRun>& runs) {
  std::vector<int64_t> out;
  out.reserve(runs.size() * 3);
  for (const auto& r : runs) out.insert(out.end(), {r.row, r.rows, r.slot});
  return out;
}

std::vector<SlotRun> unflattenRuns(const std::vector<int64_t>& flat) {
  std::vector<SlotRun> runs;
  for (size_t i = 0; i + 2 < flat.size(); i += 3) runs.push_back({flat[i], flat[i + 1], flat[i + 2]});
  return runs;
}

// Softmax of each of `rows` rows of n logits, in place.
void slotSoftmaxRows(float* s, int64_t rows, int64_t n) {
  for (int64_t i = 0; i < rows; ++i) {
    float* row = s + i * n;
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < n; ++j) m = std::max(m, row[j]);
    float sum = 0.0f;
    for (int64_t j = 0; j < n; ++j) {
      row[j] = std::exp(row[j] - m);
      sum += row[j];
    }
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < n; ++j) row[j] *= inv;
  }
}

// dP -> dS in place: dS[i, j] = P[i, j] (dP[i, j] - sum_k P[i, k] dP[i, k]).
void slotSoftmaxBackwardRows(const float* p, float* dp, int64_t rows, int64_t n) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* prow = p + i * n;
    float* drow = dp + i * n;
    float dot = 0.0f;
    for (int64_t j = 0; j < n; ++j) dot += prow[j] * drow[j];
    for (int64_t j = 0; j < n; ++j) drow[j] = prow[j] * (drow[j] - dot);
  }
}

class SlotAttentionFn : public torch::autograd::Function<SlotAttentionFn> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, int64_t heads, int64_t latents, double scale,
                               const std::vector<int64_t>& flat_runs) {
    const int l = static_cast<int>(q.size(1));
    const int d = static_cast<int>(q.size(1) / heads);
    const int n = static_cast<int>(latents);
    const auto runs = unflattenRuns(flat_runs);
    auto out = torch::zeros_like(q);  // rows of no run (none when runs cover q) stay zero
    auto probs = torch::empty({q.size(0) * heads * latents}, q.options());
    const float* qp = q.data_ptr<float>();
    const float* kp = k.data_ptr<float>();
    const float* vp = v.data_ptr<float>();
    float* op = out.data_ptr<float>();
    float* pp = probs.data_ptr<float>();
    const auto alpha = static_cast<float>(scale);
    // Heads in parallel: each writes its own columns of out and its own probabilities.
    parallelForSerialBlas(0, heads, 1, [&](int64_t h0, int64_t h1) {
      for (int64_t h = h0; h < h1; ++h) {
        for (const auto& r : runs) {
          const int m = static_cast<int>(r.rows);
          const int64_t qa = r.row * l + h * d;
          const int64_t ka = r.slot * latents * l + h * d;
          float* p = pp + (r.row * heads + h * r.rows) * latents;
          rowMajorSgemm(false, true, m, n, d, alpha, qp + qa, l, kp + ka, l, 0.0f, p, n);
          slotSoftmaxRows(p, r.rows, latents);
          rowMajorSgemm(false, false, m, d, n, 1.0f, p, n, vp + ka, l, 0.0f, op + qa, l);
        }
      }
    });
    ctx->save_for_backward({q, k, v, probs});
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["latents"] = latents;
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["runs"] = flat_runs;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& q = saved[0];
    const auto& k = saved[1];
    const auto& v = saved[2];
    const auto& probs = saved[3];
    const int64_t heads = ctx->saved_data["heads"].toInt();
    const int64_t latents = ctx->saved_data["latents"].toInt();
    const auto alpha = static_cast<float>(ctx->saved_data["scale"].toDouble());
    const auto runs = unflattenRuns(ctx->saved_data["runs"].toIntVector());
    const auto dout = grads[0].contiguous();
    const int l = static_cast<int>(q.size(1));
    const int d = static_cast<int>(q.size(1) / heads);
    const int n = static_cast<int>(latents);
    auto dq = torch::zeros_like(q);
    auto dk = torch::zeros_like(k);  // a slot no run attends to gets no gradient
    auto dv = torch::zeros_like(v);
    int64_t longest = 0;
    for (const auto& r : runs) longest = std::max(longest, r.rows);
    const float* qp = q.data_ptr<float>();
    const float* kp = k.data_ptr<float>();
    const float* vp = v.data_ptr<float>();
    const float* gp = dout.data_ptr<float>();
    const float* pp = probs.data_ptr<float>();
    float* dqp = dq.data_ptr<float>();
    float* dkp = dk.data_ptr<float>();
    float* dvp = dv.data_ptr<float>();
    // Heads in parallel: each writes its own columns of dq, dk and dv.
    parallelForSerialBlas(0, heads, 1, [&](int64_t h0, int64_t h1) {
      std::vector<float> ds(static_cast<size_t>(longest * latents));
      for (int64_t h = h0; h < h1; ++h) {
        for (const auto& r : runs) {
          const int m = static_cast<int>(r.rows);
          const int64_t qa = r.row * l + h * d;
          const int64_t ka = r.slot * latents * l + h * d;
          const float* p = pp + (r.row * heads + h * r.rows) * latents;
          // dV += P^T dO; dP = dO V^T; dS from dP; dQ = scale dS K; dK += scale dS^T Q.
          rowMajorSgemm(true, false, n, d, m, 1.0f, p, n, gp + qa, l, 1.0f, dvp + ka, l);
          rowMajorSgemm(false, true, m, n, d, 1.0f, gp + qa, l, vp + ka, l, 0.0f, ds.data(), n);
          slotSoftmaxBackwardRows(p, ds.data(), r.rows, latents);
          rowMajorSgemm(false, false, m, d, n, alpha, ds.data(), n, kp + ka, l, 0.0f, dqp + qa, l);
          rowMajorSgemm(true, false, n, d, m, alpha, ds.data(), n, qp + qa, l, 1.0f, dkp + ka, l);
        }
      }
    });
    return {dq, dk, dv, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

std::vector<SlotRun> slotRuns(const at::Tensor& attending, const at::Tensor& text_time, int64_t slots) {
  const int64_t length = text_time.size(1);
  const auto index = attending.to(torch::kCPU, torch::kLong).contiguous();
  const auto time =
      text_time.reshape({-1}).index_select(0, attending).to(torch::kCPU, torch::kLong).contiguous();
  const int64_t* ip = index.data_ptr<int64_t>();
  const int64_t* tp = time.data_ptr<int64_t>();
  std::vector<SlotRun> runs;
  for (int64_t i = 0; i < index.numel(); ++i) {
    TORCH_CHECK(tp[i] >= 1 && tp[i] <= slots, "slotRuns: an attending token has text_time ", tp[i],
                " outside 1..", slots);
    const int64_t slot = (ip[i] / length) * slots + tp[i] - 1;
    if (!runs.empty() && runs.back().slot == slot && runs.back().row + runs.back().rows == i) {
      ++runs.back().rows;
    } else {
      runs.push_back({i, 1, slot});
    }
  }
  return runs;
}

bool slotAttentionSupports(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  const auto cpuFloat = [](const at::Tensor& t) {
    return t.device().is_cpu() && t.scalar_type() == torch::kFloat;
  };
  return cpuFloat(q) && cpuFloat(k) && cpuFloat(v);
}

at::Tensor slotAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t heads,
                         int64_t latents, double scale, const std::vector<SlotRun>& runs) {
  TORCH_CHECK(q.dim() == 2 && k.dim() == 2 && k.sizes() == v.sizes() && k.size(1) == q.size(1),
              "slotAttention: q (P, H*D) and k, v (S*n, H*D) expected, got ", q.sizes(), ", ", k.sizes(),
              ", ", v.sizes());
  TORCH_CHECK(heads > 0 && q.size(1) % heads == 0, "slotAttention: width ", q.size(1),
              " is not a multiple of ", heads, " heads");
  TORCH_CHECK(latents > 0 && k.size(0) % latents == 0, "slotAttention: ", k.size(0),
              " key rows are not slots of ", latents, " latents");
  TORCH_CHECK(slotAttentionSupports(q, k, v), "slotAttention: fp32 CPU tensors only, got ", q.scalar_type(),
              ", ", k.scalar_type(), ", ", v.scalar_type(), " on ", q.device());
  const int64_t slots = k.size(0) / latents;
  int64_t next = 0;
  for (const auto& r : runs) {
    TORCH_CHECK(r.row == next && r.rows > 0 && r.slot >= 0 && r.slot < slots, "slotAttention: run (", r.row,
                ", ", r.rows, ", slot ", r.slot, ") does not continue the runs at row ", next, " within ",
                slots, " slots");
    next += r.rows;
  }
  TORCH_CHECK(next == q.size(0), "slotAttention: the runs cover ", next, " of ", q.size(0), " rows");
  return SlotAttentionFn::apply(q.contiguous(), k.contiguous(), v.contiguous(), heads, latents, scale,
                                flattenRuns(runs));
}

}  // namespace fs::model
