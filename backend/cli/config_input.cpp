#include "backend/cli/config_input.h"

#include <iostream>
#include <sstream>

#include "backend/protocol/config/config_override.h"
#include "backend/protocol/config/config_yaml.h"

namespace fs::cli {

void printProblems(const std::string& source, const std::vector<protocol::Problem>& problems,
                   std::ostream& os) {
  for (const auto& p : problems) {
    std::string text = p.toString();
    // Loader messages already start with "<file>:<line>"; don't repeat the file.
    if (!source.empty() && p.message.rfind(source, 0) != 0) text = source + ": " + text;
    os << text << "\n";
  }
}

std::optional<protocol::RunConfig> loadRunConfig(const std::string& path,
                                                 const std::vector<std::string>& sets, Io& io) {
  protocol::ConfigLoad load;
  if (path == "-") {
    std::stringstream ss;
    ss << io.in.rdbuf();
    load = protocol::loadConfigYaml(ss.str(), "<stdin>");
  } else {
    load = protocol::loadConfigFile(path);
  }
  if (!load.ok()) {
    printProblems(path == "-" ? "<stdin>" : path, load.problems, io.err);
    return std::nullopt;
  }
  auto overrideProblems = protocol::applyOverrides(&load.config, sets);
  if (!overrideProblems.empty()) {
    printProblems("", overrideProblems, io.err);
    return std::nullopt;
  }
  return load.config;
}

}  // namespace fs::cli
