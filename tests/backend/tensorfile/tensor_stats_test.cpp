// tensor_stats against torch: stats_oracle.py writes tensors of every dtype
// (strided views, NaN/Inf, edge cases) and torch's figures; we read the same
// file and compare. Tolerances (relative to the data's RMS for the mean, to the
// value for std / norm):
//  - vs torch on t.double(): 1e-12. Both accumulate in double; only the order
//    of additions differs (error ~ n * 2^-53 with n <= 5120).
//  - vs torch on fp32 tensors (bf16 / fp16 as t.float(), exact; torch's own
//    half reductions round to the half type): 2e-6, a few fp32 ulps of the
//    result plus torch's fp32 accumulation; fp64: 1e-12.
//  - min, max, counts and every histogram bin: exact.
#include "backend/tensorfile/tensor_stats.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "backend/tensorfile/state_dict.h"
#include "tests/backend/tensorfile/tensorfile_test_util.h"

namespace fs::tensorfile {
namespace {

using Code = Status::Code;

struct Oracle {
  std::string dir;
  nlohmann::json json;
};

const Oracle& oracle() {
  static const Oracle o = [] {
    Oracle r;
    r.dir = test::makeTempDir("stats");
    if (r.dir.empty() || !test::runPython("stats_oracle.py", r.dir)) return Oracle{};
    std::ifstream in(r.dir + "/stats.json");
    r.json = nlohmann::json::parse(in, nullptr, false);
    return r;
  }();
  return o;
}

double num(const nlohmann::json& j) {
  return j.is_string() ? std::stod(j.get<std::string>()) : j.get<double>();
}

void expectClose(double ours, double ref, double tol, const std::string& what) {
  if (std::isnan(ref)) {
    EXPECT_TRUE(std::isnan(ours)) << what << ": " << ours;
  } else {
    EXPECT_LE(std::abs(ours - ref), tol) << what << ": ours " << ours << " torch " << ref;
  }
}

// Ours against the oracle's entry `e` for one tensor (or a raw buffer).
void checkAgainst(const TensorView& view, const nlohmann::json& e, const nlohmann::json& all,
                  const std::string& name) {
  SCOPED_TRACE(name);
  const int bins = all["bins"];
  StatsOptions opt;
  opt.bins = bins;
  auto s = computeStats(view, opt);
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  const Moments& m = s->moments;
  EXPECT_EQ(m.count, e["numel"].get<std::uint64_t>());
  EXPECT_EQ(m.finite, e["finite"].get<std::uint64_t>());
  EXPECT_EQ(m.zeros, e["zeros"].get<std::uint64_t>());
  EXPECT_EQ(m.nans, e["nans"].get<std::uint64_t>());
  EXPECT_EQ(m.posInfs, e["posinfs"].get<std::uint64_t>());
  EXPECT_EQ(m.negInfs, e["neginfs"].get<std::uint64_t>());
  if (e.contains("min")) {
    ASSERT_TRUE(m.min && m.max);
    if (m.min->kind == StatScalar::Kind::kFloat) {
      EXPECT_EQ(m.min->f, std::stod(e["min"].get<std::string>()));
      EXPECT_EQ(m.max->f, std::stod(e["max"].get<std::string>()));
    } else {  // exact integers, compared as text
      EXPECT_EQ(m.min->toString(), e["min"].get<std::string>());
      EXPECT_EQ(m.max->toString(), e["max"].get<std::string>());
    }
  } else {
    EXPECT_FALSE(m.min.has_value());
  }
  const double rms = num(e["rms"]);
  expectClose(m.meanOrNaN(), num(e["mean"]), 1e-12 * rms, "mean vs double");
  expectClose(m.stddev(), num(e["std"]), 1e-12 * std::abs(num(e["std"])), "std vs double");
  expectClose(m.variance(0), num(e["var0"]), 1e-12 * std::abs(num(e["var0"])), "var(correction=0)");
  expectClose(m.l2Norm(), num(e["norm"]), 1e-12 * num(e["norm"]), "norm vs double");
  if (e.contains("native")) {
    const auto& n = e["native"];
    const DType dt = view.dtype;
    const double rel = dt == DType::kFloat64 ? 1e-12 : 2e-6;
    expectClose(m.meanOrNaN(), num(n["mean"]), rel * rms, "mean vs torch " + std::string(torchName(dt)));
    expectClose(m.stddev(), num(n["std"]), rel * num(n["std"]), "std vs torch");
    expectClose(m.l2Norm(), num(n["norm"]), rel * num(n["norm"]), "norm vs torch");
  }
  ASSERT_TRUE(s->histogram.has_value());
  EXPECT_EQ(s->histogram->counts, e["hist"].get<std::vector<std::uint64_t>>())
      << "torch.histc, default range";
  if (e.contains("hist_lo") && e["hist_lo"] != e["hist_hi"]) {
    EXPECT_EQ(s->histogram->lo, num(e["hist_lo"]));
    EXPECT_EQ(s->histogram->hi, num(e["hist_hi"]));
  }
  // A given range: one pass, moments unchanged.
  opt.range = {all["range"][0].get<double>(), all["range"][1].get<double>()};
  auto r = computeStats(view, opt);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->histogram->counts, e["hist_range"].get<std::vector<std::uint64_t>>()) << "torch.histc, range";
  EXPECT_EQ(r->moments.finite, m.finite);
  EXPECT_EQ(r->moments.mean, m.mean);
}

class TensorStatsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(oracle().dir.empty())
        << "stats_oracle.py failed (needs " FS_PYTHON " with torch: run scripts/install-deps.sh)";
    auto f = openTorchFile(oracle().dir + "/stats.pt");
    ASSERT_TRUE(f.isOk()) << f.status().toString();
    file_.emplace(std::move(*f));
    auto t = flattenTensors(file_->root());
    ASSERT_TRUE(t.isOk());
    for (auto& nt : *t) {
      auto v = file_->view(*nt.tensor);
      ASSERT_TRUE(v.isOk()) << nt.name << ": " << v.status().toString();
      views_[nt.name] = *v;
    }
  }
  std::optional<TorchFile> file_;
  std::map<std::string, TensorView> views_;
};

TEST_F(TensorStatsTest, EveryTensorMatchesTorch) {
  const auto& all = oracle().json;
  ASSERT_EQ(views_.size(), all["tensors"].size());
  for (const auto& [name, e] : all["tensors"].items()) checkAgainst(views_.at(name), e, all, name);
}

TEST_F(TensorStatsTest, UnsignedTypesTorchLacks) {
  const auto& all = oracle().json;
  for (const auto& [name, e] : all["raw"].items()) {
    const auto bytes = test::readBytes(oracle().dir + "/" + name + ".bin");
    TensorView v;
    v.dtype = name == "uint16" ? DType::kUInt16 : name == "uint32" ? DType::kUInt32 : DType::kUInt64;
    v.shape = e["shape"].get<std::vector<std::int64_t>>();
    v.strides = contiguousStrides(v.shape);
    v.bytes = bytes;
    checkAgainst(v, e, all, name);
  }
}

TEST_F(TensorStatsTest, SubtreeMergesAcrossDtypes) {
  const auto& g = oracle().json["group"];
  std::vector<TensorView> views;
  for (const auto& n : g["names"]) views.push_back(views_.at(n.get<std::string>()));
  StatsOptions opt;
  opt.bins = oracle().json["bins"];
  auto s = computeStats(views, opt);
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_EQ(s->moments.count, g["numel"].get<std::uint64_t>());
  EXPECT_EQ(s->moments.min->toDouble(), g["min"].get<double>());
  EXPECT_EQ(s->moments.max->toDouble(), g["max"].get<double>());
  const double rms = g["rms"];
  expectClose(s->moments.mean, g["mean"], 1e-12 * rms, "mean");
  expectClose(s->moments.stddev(), g["std"], 1e-12 * g["std"].get<double>(), "std");
  expectClose(s->moments.l2Norm(), g["norm"], 1e-12 * g["norm"].get<double>(), "norm");
  EXPECT_EQ(s->histogram->counts, g["hist"].get<std::vector<std::uint64_t>>());

  // The same from per-tensor accumulators merged in another order (as threads would).
  Moments merged;
  Histogram hist = Histogram::make(opt.bins, g["min"].get<double>(), g["max"].get<double>());
  for (auto it = views.rbegin(); it != views.rend(); ++it) {
    Moments part;
    Histogram h = Histogram::make(opt.bins, hist.lo, hist.hi);
    StatsControl c;
    ASSERT_TRUE(accumulateMoments(*it, part, c).isOk());
    ASSERT_TRUE(accumulateHistogram(*it, h, c).isOk());
    merged.merge(part);
    ASSERT_TRUE(hist.sameBins(h));
    hist.merge(h);
  }
  EXPECT_EQ(hist.counts, s->histogram->counts);
  expectClose(merged.mean, g["mean"], 1e-12 * rms, "merged mean");
  expectClose(merged.stddev(), g["std"], 1e-12 * g["std"].get<double>(), "merged std");
}

TEST(TensorStats, HalfConversionsMatchTorchForEveryBitPattern) {
  ASSERT_FALSE(oracle().dir.empty());
  for (const bool bf16 : {false, true}) {
    const auto bytes = test::readBytes(oracle().dir + (bf16 ? "/bf16_all.bin" : "/fp16_all.bin"));
    ASSERT_EQ(bytes.size(), 65536u * 4);
    int mismatches = 0;
    for (std::uint32_t b = 0; b < 65536; ++b) {
      float ref;
      std::memcpy(&ref, bytes.data() + b * 4, 4);
      const float ours =
          bf16 ? bf16ToFloat(static_cast<std::uint16_t>(b)) : fp16ToFloat(static_cast<std::uint16_t>(b));
      const bool same = std::isnan(ref)
                            ? std::isnan(ours)
                            : std::bit_cast<std::uint32_t>(ours) == std::bit_cast<std::uint32_t>(ref);
      if (!same && ++mismatches < 5)
        ADD_FAILURE() << (bf16 ? "bf16 " : "fp16 ") << std::hex << b << ": " << ours << " vs " << ref;
    }
    EXPECT_EQ(mismatches, 0);
  }
}

TensorView floatView(const std::vector<float>& data) {
  TensorView v;
  v.dtype = DType::kFloat32;
  v.shape = {static_cast<std::int64_t>(data.size())};
  v.strides = {1};
  v.bytes = std::as_bytes(std::span(data));
  return v;
}

TEST(TensorStats, ProgressIsMonotonicAndEndsAtTotal) {
  std::vector<float> data(8 << 20);
  std::mt19937 rng(1);
  std::normal_distribution<float> dist;
  for (float& x : data) x = dist(rng);
  const TensorView v = floatView(data);
  const std::uint64_t bytes = data.size() * 4;
  for (const bool ranged : {false, true}) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> seen;
    StatsOptions opt;
    opt.bins = 64;
    if (ranged) opt.range = {-1.0, 1.0};
    opt.chunkBytes = 1 << 20;
    opt.progress = [&](std::uint64_t done, std::uint64_t total) { seen.emplace_back(done, total); };
    ASSERT_TRUE(computeStats(v, opt).isOk());
    const std::uint64_t total = ranged ? bytes : 2 * bytes;  // two passes without a range
    ASSERT_GE(seen.size(), 8u);
    for (std::size_t i = 0; i < seen.size(); ++i) {
      EXPECT_EQ(seen[i].second, total);
      if (i) {
        EXPECT_GT(seen[i].first, seen[i - 1].first);
      }
    }
    EXPECT_EQ(seen.back().first, total);
  }
}

TEST(TensorStats, ManySmallTensorsReportProgressPerChunk) {
  std::vector<float> data(1000, 0.5f);
  std::vector<TensorView> views(5000, floatView(data));
  std::vector<std::uint64_t> seen;
  StatsOptions opt;
  opt.chunkBytes = 1 << 20;
  opt.progress = [&](std::uint64_t done, std::uint64_t total) {
    EXPECT_EQ(total, 5000u * 4000u);
    seen.push_back(done);
  };
  auto s = computeStats(views, opt);
  ASSERT_TRUE(s.isOk());
  EXPECT_EQ(s->moments.count, 5000000u);
  EXPECT_EQ(s->moments.stddev(), 0.0);
  EXPECT_LE(seen.size(), 21u);  // 20 MB in 1 MiB chunks, and the end
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back(), 5000u * 4000u);
}

TEST(TensorStats, CancelMidwayReturnsCancelled) {
  std::vector<float> data(8 << 20, 1.5f);
  const TensorView v = floatView(data);
  std::atomic<bool> cancel{false};
  std::uint64_t last = 0;
  StatsOptions opt;
  opt.bins = 10;
  opt.cancel = &cancel;
  opt.chunkBytes = 1 << 20;
  opt.progress = [&](std::uint64_t done, std::uint64_t) {
    last = done;
    if (done >= (4u << 20)) cancel = true;
  };
  auto s = computeStats(v, opt);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.status().code(), Code::kCancelled);
  EXPECT_LT(last, 2 * data.size() * 4);
  // Already cancelled: nothing is read.
  auto again = computeStats(v, opt);
  EXPECT_EQ(again.status().code(), Code::kCancelled);
}

TEST(TensorStats, RefusesComplexFloat8AndShortBytes) {
  std::vector<std::byte> bytes(64);
  TensorView v;
  v.shape = {4};
  v.strides = {1};
  v.bytes = bytes;
  for (DType dt : {DType::kComplex64, DType::kComplex128, DType::kFloat8E4M3, DType::kFloat8E5M2}) {
    v.dtype = dt;
    auto s = computeStats(v, {});
    EXPECT_EQ(s.status().code(), Code::kUnsupported);
    EXPECT_NE(s.status().message().find(std::string(torchName(dt))), std::string::npos)
        << s.status().message();
  }
  v.dtype = DType::kFloat64;
  v.shape = {3, 4};
  v.strides = {4, 1};  // needs 96 bytes
  EXPECT_EQ(computeStats(v, {}).status().code(), Code::kInvalidArgument);
  StatsOptions bad;
  bad.bins = 4;
  bad.range = {1.0, 0.0};
  v.shape = {2};
  v.strides = {1};
  EXPECT_EQ(computeStats(v, bad).status().code(), Code::kInvalidArgument);
}

TEST(TensorStats, UnalignedAndStridedBytesAreGathered) {
  // Elements at an odd address (safetensors offsets need not be aligned), read with stride 3.
  std::vector<std::byte> raw(1 + 3 * 1000 * 4);
  std::vector<float> picked;
  for (int i = 0; i < 3000; ++i) {
    const float x = static_cast<float>(i % 17) - 4.0f;
    std::memcpy(raw.data() + 1 + i * 4, &x, 4);
    if (i % 3 == 0) picked.push_back(x);
  }
  TensorView v;
  v.dtype = DType::kFloat32;
  v.shape = {1000};
  v.strides = {3};
  v.bytes = std::span(raw).subspan(1);
  StatsOptions opt;
  opt.bins = 17;
  auto a = computeStats(v, opt);
  auto b = computeStats(floatView(picked), opt);
  ASSERT_TRUE(a.isOk() && b.isOk());
  EXPECT_EQ(a->moments.mean, b->moments.mean);
  EXPECT_EQ(a->moments.m2, b->moments.m2);
  EXPECT_EQ(a->histogram->counts, b->histogram->counts);
}

TEST(TensorStats, ScalarsCompareExactlyAcrossKinds) {
  const auto big = StatScalar::ofUInt(std::numeric_limits<std::uint64_t>::max());
  const auto neg = StatScalar::ofInt(-1);
  EXPECT_TRUE(neg < big);
  EXPECT_FALSE(big < neg);
  EXPECT_TRUE(StatScalar::ofInt((std::int64_t{1} << 53) + 1) < StatScalar::ofFloat(9007199254740994.0));
  EXPECT_TRUE(StatScalar::ofFloat(9007199254740992.0) < StatScalar::ofInt((std::int64_t{1} << 53) + 1));
  EXPECT_EQ(big.toString(), "18446744073709551615");
  EXPECT_EQ(StatScalar::ofFloat(0.1).toString(), "0.1");
}

TEST(TensorStats, HistogramEdgesAndHeights) {
  Histogram h = Histogram::make(4, 2.0, 2.0);  // torch.histc widens an empty range
  EXPECT_EQ(h.lo, 1.0);
  EXPECT_EQ(h.hi, 3.0);
  EXPECT_EQ(h.binLow(0), 1.0);
  EXPECT_EQ(h.binHigh(3), 3.0);
  EXPECT_EQ(h.binLow(2), 2.0);
  h.counts = {0, 1, 9, 99};
  EXPECT_EQ(h.total(), 109u);
  EXPECT_EQ(h.maxCount(), 99u);
  const auto lin = h.heights(false), lg = h.heights(true);
  EXPECT_EQ(lin[0], 0.0);
  EXPECT_EQ(lin[3], 1.0);
  EXPECT_NEAR(lg[2], std::log(10.0) / std::log(100.0), 1e-15);
  EXPECT_GT(lg[1], lin[1]);
}

}  // namespace
}  // namespace fs::tensorfile
