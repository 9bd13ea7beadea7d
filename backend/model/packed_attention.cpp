#include "backend/model/packed_attention.h"

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

// One (sample, head) block: rows start at `row`, n of them, head columns at
// `col`, every matrix with leading dimension `ld` (the packed width H*D).
struct Block {
  int64_t row;
  int64_t n;
  int64_t col;
};

// Every (sample, head) block with its probabilities' offset (blocks and
// probabilities in head-major order, each n x n floats), so blocks can run in
// parallel: each writes its own rows x head columns of the outputs. Head-major,
// the contiguous chunks parallelFor hands the threads share the samples'
// uneven n^2 costs alike whenever the thread count divides the heads.
struct PlacedBlock {
  Block block;
  int64_t probs;  // offset of its n x n probabilities
};

std::vector<PlacedBlock> placedBlocks(const std::vector<int64_t>& offsets, int64_t heads, int64_t head_dim) {
  std::vector<PlacedBlock> blocks;
  int64_t at = 0;
  for (int64_t h = 0; h < heads; ++h) {
    for (size_t b = 0; b + 1 < offsets.size(); ++b) {
      const int64_t n = offsets[b + 1] - offsets[b];
      if (n == 0) continue;
      blocks.push_back({Block{offsets[b], n, h * head_dim}, at});
      at += n * n;
    }
  }
  return blocks;
}

// f(block, probabilities offset, scratch) over every block, in parallel over
// the intra-op threads (NOTE [Packed attention]). `scratch` holds
// scratch_floats floats for the calling chunk of blocks alone, freed after.
template <typename F>
void forEachBlock(const std::vector<int64_t>& offsets, int64_t heads, int64_t head_dim,
                  int64_t scratch_floats, F&& f) {
  const auto blocks = placedBlocks(offsets, heads, head_dim);
  parallelForSerialBlas(0, static_cast<int64_t>(blocks.size()), 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scratch(static_cast<size_t>(scratch_floats));
    for (int64_t i = begin; i < end; ++i) {
      const auto& placed = blocks[static_cast<size_t>(i)];
      f(placed.block, placed.probs, scratch.data());
    }
  });
}

int64_t probabilityFloats(const std::vector<int64_t>& offsets, int64_t heads) {
  int64_t total = 0;
  for (size_t b = 0; b + 1 < offsets.size(); ++b) {
    const int64_t n = offsets[b + 1] - offsets[b];
    total += heads * n * n;
  }
  return total;
}

// Row i of the n x n logits: causal softmax over columns 0..i, zeros after.
void causalSoftmaxRows(float* s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float* row = s + i * n;
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j <= i; ++j) m = std::max(m, row[j]);
    float sum = 0.0f;
    for (int64_t j = 0; j <= i; ++j) {
      row[j] = std::exp(row[j] - m);
      sum += row[j];
    }
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j <= i; ++j) row[j] *= inv;
    std::fill(row + i + 1, row + n, 0.0f);
  }
}

// dP -> dS in place: dS[i, j] = P[i, j] (dP[i, j] - sum_k P[i, k] dP[i, k]).
void softmaxBackwardRows(const float* p, float* dp, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float* prow = p + i * n;
    float* drow = dp + i * n;
    float dot = 0.0f;
    for (int64_t j = 0; j <= i; ++j) dot += prow[j] * drow[j];
    for (int64_t j = 0; j <= i; ++j) drow[j] = prow[j] * (drow[j] - dot);
    std::fill(drow + i + 1, drow + n, 0.0f);
  }
}

class PackedCausalAttentionFn : public torch::autograd::Function<PackedCausalAttentionFn> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, int64_t heads, double scale,
                               const std::vector<int64_t>& offsets) {
    const int64_t ld = q.size(1);
    const int64_t hd = ld / heads;
    auto out = torch::empty_like(q);
    auto probs = torch::empty({probabilityFloats(offsets, heads)}, q.options());
    const float* qp = q.data_ptr<float>();
    const float* kp = k.data_ptr<float>();
    const float* vp = v.data_ptr<float>();
    float* op = out.data_ptr<float>();
    float* pp = probs.data_ptr<float>();
    const auto alpha = static_cast<float>(scale);
    forEachBlock(offsets, heads, hd, 0, [&](const Block& blk, int64_t probs_at, float*) {
      const int64_t at = blk.row * ld + blk.col;
      const int n = static_cast<int>(blk.n);
      float* p = pp + probs_at;
      rowMajorSgemm(false, true, n, n, static_cast<int>(hd), alpha, qp + at, static_cast<int>(ld), kp + at,
                    static_cast<int>(ld), 0.0f, p, n);
      causalSoftmaxRows(p, blk.n);
      rowMajorSgemm(false, false, n, static_cast<int>(hd), n, 1.0f, p, n, vp + at, static_cast<int>(ld), 0.0f,
                    op + at, static_cast<int>(ld));
    });
    ctx->save_for_backward({q, k, v, probs});
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["offsets"] = offsets;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& q = saved[0];
    const auto& k = saved[1];
    const auto& v = saved[2];
    const auto& probs = saved[3];
    const int64_t heads = ctx->saved_data["heads"].toInt();
    const auto alpha = static_cast<float>(ctx->saved_data["scale"].toDouble());
    const auto offsets = ctx->saved_data["offsets"].toIntVector();
    const auto dout = grads[0].contiguous();
    const int64_t ld = q.size(1);
    const int64_t hd = ld / heads;
    auto dq = torch::empty_like(q);
    auto dk = torch::empty_like(k);
    auto dv = torch::empty_like(v);
    int64_t longest = 0;
    for (size_t b = 0; b + 1 < offsets.size(); ++b) longest = std::max(longest, offsets[b + 1] - offsets[b]);
    const float* qp = q.data_ptr<float>();
    const float* kp = k.data_ptr<float>();
    const float* vp = v.data_ptr<float>();
    const float* gp = dout.data_ptr<float>();
    const float* probs_base = probs.data_ptr<float>();
    float* dqp = dq.data_ptr<float>();
    float* dkp = dk.data_ptr<float>();
    float* dvp = dv.data_ptr<float>();
    const int l = static_cast<int>(ld);
    const int d = static_cast<int>(hd);
    // ds: dP, then dS, of one block at a time.
    forEachBlock(offsets, heads, hd, longest * longest, [&](const Block& blk, int64_t probs_at, float* ds) {
      const int64_t at = blk.row * ld + blk.col;
      const int n = static_cast<int>(blk.n);
      const float* pp = probs_base + probs_at;
      // dV = P^T dO; dP = dO V^T; dS from dP; dQ = scale dS K; dK = scale dS^T Q.
      rowMajorSgemm(true, false, n, d, n, 1.0f, pp, n, gp + at, l, 0.0f, dvp + at, l);
      rowMajorSgemm(false, true, n, n, d, 1.0f, gp + at, l, vp + at, l, 0.0f, ds, n);
      softmaxBackwardRows(pp, ds, blk.n);
      rowMajorSgemm(false, false, n, d, n, alpha, ds, n, kp + at, l, 0.0f, dqp + at, l);
      rowMajorSgemm(true, false, n, d, n, alpha, ds, n, qp + at, l, 0.0f, dkp + at, l);
    });
    return {dq, dk, dv, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

bool packedAttentionSupports(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double dropout,
                             bool training) {
  const auto cpuFloat = [](const at::Tensor& t) {
    return t.device().is_cpu() && t.scalar_type() == torch::kFloat;
  };
  return cpuFloat(q) && cpuFloat(k) && cpuFloat(v) && !(training && dropout > 0.0);
}

at::Tensor packedCausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t heads,
                                 double scale, const std::vector<int64_t>& offsets) {
  TORCH_CHECK(q.dim() == 2 && q.sizes() == k.sizes() && q.sizes() == v.sizes(),
              "packedCausalAttention: q, k, v must share one (N, H*D) shape, got ", q.sizes(), ", ",
              k.sizes(), ", ", v.sizes());
  TORCH_CHECK(heads > 0 && q.size(1) % heads == 0, "packedCausalAttention: width ", q.size(1),
              " is not a multiple of ", heads, " heads");
  TORCH_CHECK(!offsets.empty() && offsets.front() == 0 && offsets.back() == q.size(0) &&
                  std::is_sorted(offsets.begin(), offsets.end()),
              "packedCausalAttention: offsets must rise from 0 to the ", q.size(0), " packed rows");
  TORCH_CHECK(packedAttentionSupports(q, k, v, 0.0, false),
              "packedCausalAttention: fp32 CPU tensors only, got ", q.scalar_type(), ", ", k.scalar_type(),
              ", ", v.scalar_type(), " on ", q.device());
  return PackedCausalAttentionFn::apply(q.contiguous(), k.contiguous(), v.contiguous(), heads, scale,
                                        offsets);
}

std::vector<int64_t> packedOffsets(const at::Tensor& attention_mask) {
  const auto counts = attention_mask.ne(0).sum(1).to(torch::kLong).cpu().contiguous();
  std::vector<int64_t> offsets{0};
  const int64_t* c = counts.data_ptr<int64_t>();
  for (int64_t b = 0; b < counts.size(0); ++b) offsets.push_back(offsets.back() + c[b]);
  return offsets;
}

}  // namespace fs::model
