#include "backend/state_keys/key_classify.h"

#include <algorithm>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace fs::state_keys {

std::string shapeString(const std::vector<std::int64_t>& shape) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ']';
  return out.str();
}

namespace {
void listNames(std::ostringstream& out, const std::vector<std::string>& names, std::size_t max_names) {
  out << " (";
  for (std::size_t i = 0; i < names.size() && i < max_names; ++i) out << (i ? ", " : "") << names[i];
  if (names.size() > max_names) out << ", and " << names.size() - max_names << " more";
  out << ')';
}
}  // namespace

std::string LoadReport::summary(std::size_t max_names) const {
  std::ostringstream out;
  const std::size_t total = loaded.size() + missing.size() + mismatched.size() + expectedFrozen.size();
  out << "loaded " << loaded.size() << " of " << total << " parameters";
  if (!expectedFrozen.empty()) out << "; " << expectedFrozen.size() << " frozen kept from the base weights";
  if (!missing.empty()) {
    out << "; missing " << missing.size();
    listNames(out, missing, max_names);
  }
  if (!mismatched.empty()) {
    out << "; mis-shaped " << mismatched.size() << " (";
    for (std::size_t i = 0; i < mismatched.size() && i < max_names; ++i) {
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

Classification classifyKeys(const std::vector<NamedShape>& ours, const std::vector<NamedShape>& source,
                            const KeyMapper& map) {
  Classification out;
  LoadReport& report = out.report;
  std::unordered_map<std::string, const std::vector<std::int64_t>*> shapes;
  for (const auto& p : ours) shapes.emplace(p.name, &p.shape);

  std::vector<const NamedShape*> keys;
  for (const auto& s : source) keys.push_back(&s);
  std::sort(keys.begin(), keys.end(),
            [](const NamedShape* a, const NamedShape* b) { return a->name < b->name; });

  std::unordered_set<std::string> done;  // loaded or mis-shaped
  auto apply = [&](const NamedShape& src, const std::string& name) {
    const auto& expected = *shapes.at(name);
    if (expected != src.shape) {
      report.mismatched.push_back({name, expected, src.shape});
    } else {
      out.copies.emplace_back(src.name, name);
      report.loaded.push_back(name);
    }
    done.insert(name);
  };

  std::vector<std::pair<const NamedShape*, std::string>> aliases;  // key, target
  for (const NamedShape* key : keys) {
    const auto target = map(key->name);
    if (!target || (target->kind == KeyTarget::Kind::kParameter && shapes.count(target->name) == 0)) {
      report.unexpected.push_back(key->name);
    } else if (target->kind == KeyTarget::Kind::kIgnored) {
      report.ignored.push_back(key->name);
    } else if (target->alias) {
      aliases.emplace_back(key, target->name);
    } else if (done.count(target->name) != 0) {
      report.ignored.push_back(
          key->name);  // two canonical spellings of one name (e.g. with and without "module.")
    } else {
      apply(*key, target->name);
    }
  }
  for (const auto& [key, name] : aliases) {
    if (done.count(name) != 0) {
      report.ignored.push_back(key->name);
    } else {
      apply(*key, name);
    }
  }
  for (const auto& p : ours) {
    if (done.count(p.name) == 0) report.missing.push_back(p.name);
  }
  return out;
}

}  // namespace fs::state_keys
