#include "backend/protocol/config/config_override.h"

#include <algorithm>

#include "backend/protocol/config/schema.h"
#include "backend/protocol/config/text_match.h"

namespace fs::protocol {
namespace {

// "data.datasets[3].name" with 3 == size: grow the list by one first.
void maybeAppend(RunConfig* config, const std::string& path) {
  const auto open = path.find('[');
  const auto close = path.find(']', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || close == std::string::npos) return;
  const std::string listPath = path.substr(0, open);
  if (listPath != "data.datasets") return;
  size_t index = 0;
  try {
    index = std::stoul(path.substr(open + 1, close - open - 1));
  } catch (...) {
    return;
  }
  if (index == config->data.datasets.size()) {
    config->data.datasets.push_back(defaultDataset("dataset" + std::to_string(index), "laion"));
  }
}

Status keepDatasets(RunConfig* config, const std::string& value) {
  std::vector<DatasetConfig> kept;
  std::vector<std::string> names;
  for (const auto& d : config->data.datasets) names.push_back(d.name);
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    if (comma == std::string::npos) comma = value.size();
    std::string name = value.substr(start, comma - start);
    name.erase(0, name.find_first_not_of(" []"));
    name.erase(name.find_last_not_of(" []") + 1);
    start = comma + 1;
    if (name.empty()) continue;
    auto it = std::find_if(config->data.datasets.begin(), config->data.datasets.end(),
                           [&](const DatasetConfig& d) { return d.name == name; });
    if (it == config->data.datasets.end()) {
      return Status::invalidArgument("data.datasets: no dataset named '" + name + "'" +
                                     didYouMean(name, names) + "; to add one, set data.datasets[" +
                                     std::to_string(names.size()) + "].name");
    }
    kept.push_back(*it);
  }
  if (kept.empty()) return Status::invalidArgument("data.datasets: keep at least one dataset");
  config->data.datasets = std::move(kept);
  return Status::ok();
}

// "launch.env.NAME": one entry of a string-map field, set to `text` exactly as given.
// False when `path` is not <a string-map field>.<name>.
bool setMapEntry(RunConfig* config, const std::string& path, const std::string& text) {
  const auto dot = path.rfind('.');
  if (dot == std::string::npos || dot + 1 == path.size()) return false;
  auto ref = resolvePath(runConfigSchema(), config, path.substr(0, dot));
  if (!ref || ref->spec->type != FieldType::kStringMap) return false;
  auto map = std::get<StringMap>(ref->spec->get(ref->owner));
  map[path.substr(dot + 1)] = text;
  ref->spec->set(ref->owner, Value(std::move(map)));
  return true;
}

}  // namespace

Status applyOverride(RunConfig* config, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    return Status::invalidArgument("override '" + assignment + "' is not of the form path=value");
  }
  std::string path = assignment.substr(0, eq);
  path.erase(path.find_last_not_of(' ') + 1);
  const std::string text = assignment.substr(eq + 1);
  if (path == "data.datasets") return keepDatasets(config, text);
  maybeAppend(config, path);
  auto ref = resolvePath(runConfigSchema(), config, path);
  if (!ref) return setMapEntry(config, path, text) ? Status::ok() : ref.status();
  auto value = valueFromText(*ref->spec, text, ref->path);
  if (!value) return value.status();
  const std::string why = checkValue(*ref->spec, value.value());
  if (!why.empty()) return Status::invalidArgument(ref->path + ": " + why);
  ref->spec->set(ref->owner, value.value());
  return Status::ok();
}

std::vector<Problem> applyOverrides(RunConfig* config, const std::vector<std::string>& assignments) {
  std::vector<Problem> problems;
  for (const auto& a : assignments) {
    Status s = applyOverride(config, a);
    if (!s) problems.push_back({Problem::Severity::kError, "", "--set " + a + ": " + s.message(), ""});
  }
  return problems;
}

}  // namespace fs::protocol
