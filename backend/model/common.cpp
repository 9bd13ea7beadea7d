#include "backend/model/common.h"

#include <torch/torch.h>

#include <limits>
#include <sstream>

#include "backend/model/dropout.h"
#include "backend/model/layer_norm.h"

namespace fs::model {

// ---------------------------------------------------------------- norms

NormImpl::NormImpl(NormOptions opts) : options(std::move(opts)) {
  weight = register_parameter("weight", torch::ones({options.dim()}));
  if (options.bias() && !options.rms()) {
    bias = register_parameter("bias", torch::zeros({options.dim()}));
  }
}

torch::Tensor NormImpl::forward(const torch::Tensor& x) {
  if (options.rms()) {
    const auto xf = x.to(torch::kFloat);
    const auto variance = xf.pow(2).mean(-1, /*keepdim=*/true);
    const auto normed = xf * torch::rsqrt(variance + options.eps());
    return weight * normed.to(x.scalar_type());
  }
  if (x.scalar_type() != weight.scalar_type()) {
    // Mixed precision (CPU autocast in LibTorch 1.13 leaves layer_norm alone
    // and its kernel needs one dtype): compute in fp32, as CUDA autocast does.
    const auto b = bias.defined() ? bias.to(torch::kFloat) : bias;
    return layerNorm(x.to(torch::kFloat), options.dim(), weight.to(torch::kFloat), b, options.eps());
  }
  return layerNorm(x, options.dim(), weight, bias, options.eps());
}

// ---------------------------------------------------------------- feed-forward

FeedForwardImpl::FeedForwardImpl(int64_t dim, int64_t mult) {
  const int64_t inner = dim * mult;
  norm = register_module("0", Norm(NormOptions(dim)));
  up = register_module("1", torch::nn::Linear(torch::nn::LinearOptions(dim, inner).bias(false)));
  down = register_module("3", torch::nn::Linear(torch::nn::LinearOptions(inner, dim).bias(false)));
}

torch::Tensor FeedForwardImpl::forward(const torch::Tensor& x) {
  return down->forward(torch::gelu(up->forward(norm->forward(x))));
}

// ---------------------------------------------------------------- attention arithmetic

torch::nn::Linear noBiasLinear(int64_t in, int64_t out) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
}

torch::Tensor splitHeads(const torch::Tensor& x, int64_t heads) {
  const auto b = x.size(0);
  const auto l = x.size(1);
  return x.view({b, l, heads, x.size(2) / heads}).transpose(1, 2);
}

torch::Tensor mergeHeads(const torch::Tensor& x) {
  const auto b = x.size(0);
  const auto l = x.size(2);
  return x.transpose(1, 2).reshape({b, l, x.size(1) * x.size(3)});
}

torch::Tensor scaledDotAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                 double scale, const torch::Tensor& bias, double dropout, bool training) {
  auto scores = torch::matmul(q, k.transpose(-2, -1));
  if (scale != 1.0) scores = scores * scale;
  if (bias.defined()) scores = scores + bias;
  const bool half = q.scalar_type() == torch::kHalf || q.scalar_type() == torch::kBFloat16;
  auto probs =
      half ? torch::softmax(scores, -1, torch::kFloat).to(q.scalar_type()) : torch::softmax(scores, -1);
  if (training && dropout > 0.0) probs = applyDropout(probs, dropout, true);
  return torch::matmul(probs, v);
}

bool skippingPays(int64_t skipped, int64_t work_per_item) {
  return static_cast<double>(skipped) * static_cast<double>(work_per_item) >= 262144.0;  // 2^18
}

Padding paddingFor(const torch::Tensor& input_ids, const torch::Tensor& attention_mask, int64_t pad_id,
                   int64_t width, const torch::Tensor& dead) {
  // At most every position is padding: when even that does not pay, no need to look.
  if (!skippingPays(attention_mask.numel(), width * width)) return Padding::kCompute;
  const auto masked = attention_mask.eq(0);
  const auto skipped = (dead.defined() ? (masked | dead) : masked).sum().item<int64_t>();
  if (!skippingPays(skipped, width * width)) return Padding::kCompute;
  if ((masked & input_ids.ne(pad_id)).any().item<bool>()) return Padding::kCompute;
  return Padding::kSkip;
}

torch::Tensor realTokenIndex(const torch::Tensor& attention_mask) {
  const auto flat = attention_mask.reshape({-1});
  const auto index = flat.ne(0).nonzero().squeeze(1);
  if (index.size(0) == flat.size(0)) return torch::Tensor();
  return index;
}

torch::Tensor packTokens(const torch::Tensor& x, const torch::Tensor& real_tokens) {
  const auto rows = x.flatten(0, 1);
  return real_tokens.defined() ? rows.index_select(0, real_tokens) : rows;
}

torch::Tensor unpackTokens(const torch::Tensor& y, const torch::Tensor& real_tokens, int64_t b, int64_t l) {
  std::vector<int64_t> shape{b, l};
  for (int64_t d = 1; d < y.dim(); ++d) shape.push_back(y.size(d));
  if (!real_tokens.defined()) return y.reshape(shape);
  auto rows = shape;
  rows.erase(rows.begin());
  rows.front() = b * l;
  // NOTE [Unpack in place]: index_copy_ into the fresh zeros, not index_copy, which would copy
  // the zeros into a second fresh tensor first. Same values, same gradient (grad.index_select).
  torch::Tensor out = torch::zeros(rows, y.options());
  out.index_copy_(0, real_tokens, y);
  return out.view(shape);
}

torch::Tensor onRealTokens(const torch::Tensor& x, const torch::Tensor& real_tokens,
                           const std::function<torch::Tensor(const torch::Tensor&)>& f) {
  return unpackTokens(f(packTokens(x, real_tokens)), real_tokens, x.size(0), x.size(1));
}

double lowestFinite(c10::ScalarType dtype) {
  switch (dtype) {
    case torch::kDouble:
      return std::numeric_limits<double>::lowest();
    case torch::kHalf:
      return -65504.0;
    case torch::kBFloat16:
      return static_cast<double>(std::numeric_limits<c10::BFloat16>::lowest());
    case torch::kFloat:
    default:
      return static_cast<double>(std::numeric_limits<float>::lowest());
  }
}

torch::Tensor causalAttentionBias(const torch::Tensor& attention_mask, c10::ScalarType dtype,
                                  const torch::Tensor& allowed) {
  TORCH_CHECK(attention_mask.dim() == 2, "causalAttentionBias: attention_mask must be (B, L), got ",
              attention_mask.sizes());
  const auto b = attention_mask.size(0);
  const auto l = attention_mask.size(1);
  const auto dev = attention_mask.device();
  const auto key_ok = attention_mask.ne(0).view({b, 1, 1, l});
  const auto causal =
      torch::ones({l, l}, torch::TensorOptions().dtype(torch::kBool).device(dev)).tril().view({1, 1, l, l});
  const auto keep = causal.logical_and(key_ok);
  const auto opts = torch::TensorOptions().dtype(dtype).device(dev);
  const auto visible = allowed.defined() ? allowed.to(opts) : torch::zeros({}, opts);
  return torch::where(keep, visible, torch::full({}, lowestFinite(dtype), opts));
}

// ---------------------------------------------------------------- rotary

RotaryTables rotaryTables(const torch::Tensor& positions, int64_t rot_dim, double base,
                          c10::ScalarType dtype) {
  TORCH_CHECK(rot_dim > 0 && rot_dim % 2 == 0, "rotaryTables: rotary width must be even and positive, got ",
              rot_dim);
  const auto fopts = torch::TensorOptions().dtype(torch::kFloat).device(positions.device());
  const auto exponents = torch::arange(0, rot_dim, 2, fopts) / static_cast<double>(rot_dim);
  const auto inv_freq = 1.0 / torch::pow(base, exponents);
  const auto angles = positions.to(torch::kFloat).unsqueeze(-1) * inv_freq;  // (B, L, rot/2)
  const auto emb = torch::cat({angles, angles}, -1).unsqueeze(1);            // (B, 1, L, rot)
  return {emb.cos().to(dtype), emb.sin().to(dtype)};
}

namespace {
torch::Tensor rotateHalf(const torch::Tensor& x) {
  const auto half = x.size(-1) / 2;
  return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}
}  // namespace

torch::Tensor applyRotary(const torch::Tensor& x, const RotaryTables& tables) {
  const auto rot = tables.cos.size(-1);
  const auto d = x.size(-1);
  if (rot == d) return x * tables.cos + rotateHalf(x) * tables.sin;
  const auto x_rot = x.narrow(-1, 0, rot);
  const auto x_pass = x.narrow(-1, rot, d - rot);
  return torch::cat({x_rot * tables.cos + rotateHalf(x_rot) * tables.sin, x_pass}, -1);
}

// ---------------------------------------------------------------- init

void initNormal(torch::Tensor& t, double std) {
  if (!t.defined()) return;
  torch::NoGradGuard no_grad;
  t.normal_(0.0, std);
}

void initZeros(torch::Tensor& t) {
  if (!t.defined()) return;
  torch::NoGradGuard no_grad;
  t.zero_();
}

torch::nn::Module& containerAt(torch::nn::Module& root, const std::string& dotted_path) {
  torch::nn::Module* current = &root;
  std::stringstream parts(dotted_path);
  std::string part;
  while (std::getline(parts, part, '.')) {
    if (part.empty()) continue;
    auto children = current->named_children();
    if (auto* found = children.find(part)) {
      current = found->get();
    } else {
      current =
          current->register_module(part, std::make_shared<torch::nn::Module>("fs::model::Container")).get();
    }
  }
  return *current;
}

}  // namespace fs::model
