#include "backend/inspect/checkpoint_diff.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "backend/tensorfile/tensor_stats.h"

namespace fs::inspect {

namespace tf = fs::tensorfile;

namespace {

// Element `i` of packed row-major bytes of `dtype`, as a double.
double element(const std::byte* p, tf::DType dtype, std::size_t i) {
  auto load = [&](auto tag) {
    decltype(tag) v;
    std::memcpy(&v, p + i * sizeof(v), sizeof(v));
    return v;
  };
  switch (dtype) {
    case tf::DType::kFloat64:
      return load(double{});
    case tf::DType::kFloat32:
      return load(float{});
    case tf::DType::kFloat16:
      return tf::fp16ToFloat(load(std::uint16_t{}));
    case tf::DType::kBFloat16:
      return tf::bf16ToFloat(load(std::uint16_t{}));
    case tf::DType::kInt64:
      return static_cast<double>(load(std::int64_t{}));
    case tf::DType::kInt32:
      return load(std::int32_t{});
    case tf::DType::kInt16:
      return load(std::int16_t{});
    case tf::DType::kInt8:
      return load(std::int8_t{});
    case tf::DType::kUInt8:
      return load(std::uint8_t{});
    case tf::DType::kUInt16:
      return load(std::uint16_t{});
    case tf::DType::kUInt32:
      return load(std::uint32_t{});
    case tf::DType::kUInt64:
      return static_cast<double>(load(std::uint64_t{}));
    case tf::DType::kBool:
      return load(std::uint8_t{}) != 0 ? 1.0 : 0.0;
    default:
      return std::numeric_limits<double>::quiet_NaN();
  }
}

// The packed elements of a view: the mapped bytes themselves when contiguous.
struct Packed {
  std::vector<std::byte> copy;
  const std::byte* data = nullptr;
};
Packed pack(const tf::TensorView& v) {
  Packed p;
  if (v.isContiguous()) {
    p.data = v.bytes.data();
  } else {
    p.copy = tf::toContiguous(v);
    p.data = p.copy.data();
  }
  return p;
}

Status compare(const CheckpointIndex& a, std::size_t ia, const CheckpointIndex& b, std::size_t ib,
               TensorDiff& d) {
  for (const tf::DType t : {d.dtypeA, d.dtypeB}) {
    if (Status s = tf::checkStatsDtype(t); !s) return Status::unsupported(d.name + ": " + s.message());
  }
  auto da = a.data(ia);
  if (!da) return da.status();
  auto db = b.data(ib);
  if (!db) return db.status();
  const Packed pa = pack(da->view), pb = pack(db->view);
  const std::int64_t numel = da->view.numel();
  const std::int64_t rowLen = d.shapeA.size() == 2 && d.shapeA[0] > 0 ? d.shapeA[1] : 0;
  if (d.shapeA.size() == 2) d.rows = d.shapeA[0];
  double dot = 0, na = 0, nb = 0, nd = 0;
  std::int64_t lastRow = -1;
  for (std::int64_t i = 0; i < numel; ++i) {
    const double x = element(pa.data, d.dtypeA, static_cast<std::size_t>(i));
    const double y = element(pb.data, d.dtypeB, static_cast<std::size_t>(i));
    const bool same = x == y || (std::isnan(x) && std::isnan(y));
    if (!same) {
      ++d.changedElements;
      const double diff = std::fabs(y - x);
      if (std::isnan(diff) || diff > d.maxAbsChange) d.maxAbsChange = diff;
      nd += (y - x) * (y - x);
      if (rowLen > 0 && i / rowLen != lastRow) {
        lastRow = i / rowLen;
        ++d.changedRowCount;
        if (d.changedRows.size() < kMaxRowsListed) d.changedRows.push_back(lastRow);
      }
    }
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  d.kind = d.changedElements > 0 ? DiffKind::kChanged : DiffKind::kUnchanged;
  d.relativeChange = nd == 0 ? 0 : na == 0 ? std::numeric_limits<double>::infinity() : std::sqrt(nd / na);
  d.cosine = (na == 0 && nb == 0) ? 1 : (na == 0 || nb == 0) ? 0 : dot / (std::sqrt(na) * std::sqrt(nb));
  return Status::ok();
}

int kindOrder(DiffKind k) {
  switch (k) {
    case DiffKind::kChanged:
      return 0;
    case DiffKind::kMisShaped:
      return 1;
    case DiffKind::kAdded:
      return 2;
    case DiffKind::kRemoved:
      return 3;
    case DiffKind::kUnchanged:
      return 4;
  }
  return 5;
}

}  // namespace

std::string_view diffKindName(DiffKind kind) {
  switch (kind) {
    case DiffKind::kUnchanged:
      return "unchanged";
    case DiffKind::kChanged:
      return "changed";
    case DiffKind::kAdded:
      return "added";
    case DiffKind::kRemoved:
      return "removed";
    case DiffKind::kMisShaped:
      return "mis-shaped";
  }
  return "?";
}

StatusOr<DiffReport> diffCheckpoints(const CheckpointIndex& a, const CheckpointIndex& b,
                                     const DiffOptions& options) {
  auto wanted = [&](Section s) {
    return std::find(options.sections.begin(), options.sections.end(), s) != options.sections.end();
  };
  std::map<std::pair<Section, std::string>, std::size_t> inB;
  for (std::size_t i = 0; i < b.tensors().size(); ++i) {
    const TensorEntry& t = b.tensors()[i];
    if (wanted(t.section)) inB.emplace(std::make_pair(t.section, t.name), i);
  }
  std::uint64_t total = 0, done = 0;
  for (const TensorEntry& t : a.tensors()) {
    auto it = inB.find({t.section, t.name});
    if (wanted(t.section) && it != inB.end() && b.tensors()[it->second].shape == t.shape)
      total += t.bytes + b.tensors()[it->second].bytes;
  }
  DiffReport report;
  for (std::size_t i = 0; i < a.tensors().size(); ++i) {
    const TensorEntry& t = a.tensors()[i];
    if (!wanted(t.section)) continue;
    if (options.cancel && options.cancel->load(std::memory_order_relaxed))
      return Status::cancelled(a.path() + " against " + b.path() + ": diff cancelled");
    TensorDiff d;
    d.name = t.name;
    d.section = t.section;
    d.shapeA = t.shape;
    d.dtypeA = t.dtype;
    auto it = inB.find({t.section, t.name});
    if (it == inB.end()) {
      d.kind = DiffKind::kRemoved;
    } else {
      const TensorEntry& u = b.tensors()[it->second];
      d.shapeB = u.shape;
      d.dtypeB = u.dtype;
      if (u.shape != t.shape) {
        d.kind = DiffKind::kMisShaped;
      } else {
        if (Status s = compare(a, i, b, it->second, d); !s) return s;
        done += t.bytes + u.bytes;
        if (options.progress) options.progress(done, total);
      }
      inB.erase(it);
    }
    report.tensors.push_back(std::move(d));
  }
  for (const auto& [key, j] : inB) {
    const TensorEntry& u = b.tensors()[j];
    TensorDiff d;
    d.name = u.name;
    d.section = u.section;
    d.kind = DiffKind::kAdded;
    d.shapeB = u.shape;
    d.dtypeB = u.dtype;
    report.tensors.push_back(std::move(d));
  }
  for (const TensorDiff& d : report.tensors) {
    switch (d.kind) {
      case DiffKind::kChanged:
        ++report.changed;
        break;
      case DiffKind::kUnchanged:
        ++report.unchanged;
        break;
      case DiffKind::kAdded:
        ++report.added;
        break;
      case DiffKind::kRemoved:
        ++report.removed;
        break;
      case DiffKind::kMisShaped:
        ++report.misShaped;
        break;
    }
  }
  std::stable_sort(report.tensors.begin(), report.tensors.end(),
                   [](const TensorDiff& x, const TensorDiff& y) {
                     if (kindOrder(x.kind) != kindOrder(y.kind)) return kindOrder(x.kind) < kindOrder(y.kind);
                     if (x.kind == DiffKind::kChanged && x.relativeChange != y.relativeChange)
                       return x.relativeChange > y.relativeChange;
                     return x.name < y.name;
                   });
  return report;
}

}  // namespace fs::inspect
