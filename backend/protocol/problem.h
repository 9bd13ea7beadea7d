// A problem found in a config: where, what, and how to fix it.
#pragma once

#include <string>
#include <vector>

namespace fs::protocol {

struct Problem {
  enum class Severity { kError, kWarning };
  Severity severity = Severity::kError;
  std::string path;     // field path, e.g. data.datasets[1].batch_size; "" for the whole config
  std::string message;  // names the bad value and what is allowed
  std::string fix;      // a suggested fix, may be empty

  bool isError() const { return severity == Severity::kError; }
  // "error: data.datasets[1].batch_size: 0 is out of range; ... Fix: ..."
  std::string toString() const;
  bool operator==(const Problem&) const = default;
};

bool hasErrors(const std::vector<Problem>& problems);
std::string formatProblems(const std::vector<Problem>& problems);

}  // namespace fs::protocol
