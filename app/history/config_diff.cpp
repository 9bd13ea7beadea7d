#include "app/history/config_diff.h"

#include <list>
#include <map>
#include <string>
#include <vector>

#include "backend/protocol/config/schema.h"

namespace fs::app {

QList<ConfigDiffField> diffConfigs(std::span<const protocol::RunConfig> configs) {
  QList<ConfigDiffField> diff;
  if (configs.size() < 2) return diff;
  // Every path any config has. Paths of a longer list exist only in some
  // configs; a path first met in a later config goes right after the path
  // that config walked before it, so the order stays the schema's.
  struct Entry {
    std::list<std::string>::iterator at;
    std::vector<std::optional<std::string>> values;
  };
  std::list<std::string> order;
  std::map<std::string, Entry> entries;
  const protocol::SectionSpec& schema = protocol::runConfigSchema();
  for (size_t i = 0; i < configs.size(); ++i) {
    auto previous = order.end();  // end(): nothing walked yet in this config
    protocol::forEachField(schema, &configs[i],
                           [&](const std::string& path, const protocol::EntrySpec& spec, const void* owner) {
                             auto it = entries.find(path);
                             if (it == entries.end()) {
                               const auto pos = previous == order.end() ? order.begin() : std::next(previous);
                               it = entries.emplace(path, Entry{order.insert(pos, path), {}}).first;
                               it->second.values.resize(configs.size());
                             }
                             it->second.values[i] = protocol::valueToText(spec, spec.get(owner));
                             previous = it->second.at;
                           });
  }
  for (const std::string& path : order) {
    const auto& v = entries.at(path).values;
    bool same = true;
    for (size_t i = 1; i < v.size() && same; ++i) same = v[i] == v[0];
    if (same) continue;
    ConfigDiffField field;
    field.path = QString::fromStdString(path);
    for (const auto& text : v) {
      field.values.append(text ? std::optional<QString>(QString::fromStdString(*text)) : std::nullopt);
    }
    diff.append(field);
  }
  return diff;
}

}  // namespace fs::app
