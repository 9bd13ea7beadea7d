#include "backend/protocol/problem.h"

namespace fs::protocol {

std::string Problem::toString() const {
  std::string s = isError() ? "error: " : "warning: ";
  if (!path.empty()) s += path + ": ";
  s += message;
  if (!fix.empty()) s += " Fix: " + fix;
  return s;
}

bool hasErrors(const std::vector<Problem>& problems) {
  for (const auto& p : problems) {
    if (p.isError()) return true;
  }
  return false;
}

std::string formatProblems(const std::vector<Problem>& problems) {
  std::string s;
  for (const auto& p : problems) s += p.toString() + "\n";
  return s;
}

}  // namespace fs::protocol
