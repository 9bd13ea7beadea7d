#include "tests/backend/trainer/step_budget_file.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>

namespace fs::testing {

using protocol::Status;

namespace {

bool validKey(const std::string& key) {
  if (key.empty()) return false;
  for (char c : key) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

bool parseCount(const std::string& text, std::int64_t* count) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *count);
  return ec == std::errc() && end == text.data() + text.size() && *count >= 0;
}

}  // namespace

protocol::StatusOr<StepBudget> readStepBudget(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return Status::notFound(path.string() + ": cannot open the step budget file");
  StepBudget budget;
  std::map<std::string, int> seenAt;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const std::string where = path.string() + ":" + std::to_string(n) + ": ";
    std::istringstream fields(line);
    std::string key, value, extra;
    if (!(fields >> key) || key.front() == '#') continue;
    if (key == "name") {
      std::string of, op;
      std::int64_t count = 0;
      if (!(fields >> of >> value) || !std::getline(fields >> std::ws, op) || op.empty()) {
        return Status::invalidArgument(where + "a `name` line wants `name KEY COUNT OP`");
      }
      if (!parseCount(value, &count)) {
        return Status::invalidArgument(where + "name " + of + " count '" + value +
                                       "' is not a non-negative integer");
      }
      if (!budget.names[of].emplace(op, count).second) {
        return Status::invalidArgument(where + "name " + of + " '" + op + "' again");
      }
      continue;
    }
    if (!(fields >> value))
      return Status::invalidArgument(where + "'" + key + "' has no value (want `key value`)");
    if (fields >> extra)
      return Status::invalidArgument(where + "unexpected '" + extra + "' after '" + key + " " + value + "'");
    if (!validKey(key)) return Status::invalidArgument(where + "key '" + key + "' is not [a-z0-9_]+");
    if (auto [it, fresh] = seenAt.emplace(key, n); !fresh) {
      return Status::invalidArgument(where + "'" + key + "' again (first on line " +
                                     std::to_string(it->second) + ")");
    }
    if (key == "libtorch") {
      budget.libtorch = value;
      continue;
    }
    std::int64_t count = 0;
    if (!parseCount(value, &count)) {
      return Status::invalidArgument(where + key + " = '" + value + "' is not a non-negative integer");
    }
    budget.counts.emplace_back(key, count);
  }
  if (in.bad()) return Status::ioError(path.string() + ": read failed");
  for (const auto& [of, ops] : budget.names) {
    bool known = false;
    for (const auto& [key, count] : budget.counts) known = known || key == of;
    if (!known)
      return Status::invalidArgument(path.string() + ": `name` lines for '" + of + "', which has no count");
  }
  if (budget.libtorch.empty()) {
    return Status::invalidArgument(path.string() +
                                   ": no `libtorch VERSION` line (the version the counts are for)");
  }
  return budget;
}

Status writeStepBudget(const std::filesystem::path& path, const std::string& header,
                       const StepBudget& budget) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return Status::ioError(tmp.string() + ": cannot create");
    std::istringstream lines(header);
    for (std::string line; std::getline(lines, line);) out << (line.empty() ? "#" : "# " + line) << "\n";
    out << "\nlibtorch " << budget.libtorch << "\n";
    for (const auto& [key, count] : budget.counts) out << key << " " << count << "\n";
    if (!budget.names.empty()) {
      out << "\n# The op names behind the counts when they were recorded (`name KEY COUNT OP`): not\n"
             "# limits; a failing count lists how its names changed against these.\n";
    }
    for (const auto& [key, count] : budget.counts) {
      const auto it = budget.names.find(key);
      if (it == budget.names.end()) continue;
      for (const auto& [op, n] : it->second) out << "name " << key << " " << n << " " << op << "\n";
    }
    out.flush();
    if (!out) return Status::ioError(tmp.string() + ": write failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Status::ioError(path.string() + ": cannot replace: " + ec.message());
  return Status::ok();
}

NameChanges compareNames(const NameCounts& recorded, const NameCounts& now) {
  NameChanges c;
  for (const auto& [name, n] : now) {
    const auto it = recorded.find(name);
    const std::int64_t was = it == recorded.end() ? 0 : it->second;
    if (n > was) c.grew.push_back({name, was, n});
    if (n < was) c.fell.push_back({name, was, n});
  }
  for (const auto& [name, was] : recorded) {
    if (now.find(name) == now.end()) c.fell.push_back({name, was, 0});
  }
  const auto delta = [](const NameChange& x) { return x.now - x.recorded; };
  std::stable_sort(c.grew.begin(), c.grew.end(),
                   [&](const auto& a, const auto& b) { return delta(a) > delta(b); });
  std::sort(c.fell.begin(), c.fell.end(), [&](const auto& a, const auto& b) {
    return delta(a) != delta(b) ? delta(a) < delta(b) : a.name < b.name;
  });
  return c;
}

std::vector<CountCheck> checkAgainstBudget(const StepBudget& budget, const NamedCounts& measured,
                                           int slackPercent) {
  const std::map<std::string, std::int64_t> recorded(budget.counts.begin(), budget.counts.end());
  std::vector<CountCheck> checks;
  for (const auto& [key, count] : measured) {
    CountCheck c{key, count, std::nullopt, BudgetVerdict::kWithin};
    if (const auto it = recorded.find(key); it == recorded.end()) {
      c.verdict = BudgetVerdict::kNoBudget;
    } else {
      c.budget = it->second;
      if (count > it->second) {
        c.verdict = BudgetVerdict::kOver;
      } else if (count * 100 < it->second * (100 - slackPercent)) {  // exact: no rounding at the edge
        c.verdict = BudgetVerdict::kLowerable;
      }
    }
    checks.push_back(c);
  }
  for (const auto& [key, value] : budget.counts) {
    bool found = false;
    for (const auto& m : measured) found = found || m.first == key;
    if (!found) checks.push_back({key, std::nullopt, value, BudgetVerdict::kStale});
  }
  return checks;
}

}  // namespace fs::testing
