#include "backend/model/state_dict.h"

#include <torch/torch.h>

#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace fs::model {

std::string shapeString(const std::vector<int64_t>& shape) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ']';
  return out.str();
}

namespace {
void listNames(std::ostringstream& out, const std::vector<std::string>& names, size_t max_names) {
  out << " (";
  for (size_t i = 0; i < names.size() && i < max_names; ++i) out << (i ? ", " : "") << names[i];
  if (names.size() > max_names) out << ", and " << names.size() - max_names << " more";
  out << ')';
}
}  // namespace

std::string LoadReport::summary(size_t max_names) const {
  std::ostringstream out;
  const size_t total = loaded.size() + missing.size() + mismatched.size() + expectedFrozen.size();
  out << "loaded " << loaded.size() << " of " << total << " parameters";
  if (!expectedFrozen.empty()) out << "; " << expectedFrozen.size() << " frozen kept from the base weights";
  if (!missing.empty()) {
    out << "; missing " << missing.size();
    listNames(out, missing, max_names);
  }
  if (!mismatched.empty()) {
    out << "; mis-shaped " << mismatched.size() << " (";
    for (size_t i = 0; i < mismatched.size() && i < max_names; ++i) {
      const auto& m = mismatched[i];
      out << (i ? ", " : "") << m.name << ": expected " << shapeString(m.expected) << ", got "
          << shapeString(m.got);
    }
    if (mismatched.size() > max_names) out << ", and " << mismatched.size() - max_names << " more";
    out << ") - wrong base model?";
  }
  if (!unexpected.empty()) {
    out << "; unexpected " << unexpected.size();
    listNames(out, unexpected, max_names);
  }
  if (!ignored.empty()) out << "; ignored " << ignored.size() << " duplicate or recomputed keys";
  return out.str();
}

void LoadReport::markExpectedFrozen(const std::function<bool(const std::string&)>& frozen) {
  std::vector<std::string> still;
  for (auto& name : missing) (frozen(name) ? expectedFrozen : still).push_back(std::move(name));
  missing = std::move(still);
}

LoadReport loadNamedTensors(const NamedTensors& params, const std::map<std::string, torch::Tensor>& source,
                            const KeyMapper& map) {
  LoadReport report;
  std::unordered_map<std::string, torch::Tensor> ours;
  for (const auto& [name, tensor] : params) ours.emplace(name, tensor);

  std::unordered_set<std::string> done;  // loaded or mis-shaped
  auto apply = [&](const std::string& key, const std::string& name, const torch::Tensor& src) {
    auto& dst = ours.at(name);
    if (dst.sizes() != src.sizes()) {
      report.mismatched.push_back({name, dst.sizes().vec(), src.sizes().vec()});
    } else {
      torch::NoGradGuard no_grad;
      dst.copy_(src);
      report.loaded.push_back(name);
    }
    done.insert(name);
  };

  std::vector<std::pair<std::string, std::string>> aliases;  // key, target
  for (const auto& [key, tensor] : source) {
    const auto target = map(key);
    if (!target || (target->kind == KeyTarget::Kind::kParameter && ours.count(target->name) == 0)) {
      report.unexpected.push_back(key);
    } else if (target->kind == KeyTarget::Kind::kIgnored) {
      report.ignored.push_back(key);
    } else if (target->alias) {
      aliases.emplace_back(key, target->name);
    } else if (done.count(target->name) != 0) {
      report.ignored.push_back(key);  // two canonical spellings of one name (e.g. with and without "module.")
    } else {
      apply(key, target->name, tensor);
    }
  }
  for (const auto& [key, name] : aliases) {
    if (done.count(name) != 0) {
      report.ignored.push_back(key);
    } else {
      apply(key, name, source.at(key));
    }
  }
  for (const auto& [name, tensor] : params) {
    if (done.count(name) == 0) report.missing.push_back(name);
  }
  return report;
}

}  // namespace fs::model
