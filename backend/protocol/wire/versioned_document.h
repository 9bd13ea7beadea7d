// The prologue of every whole-file JSON record with a "schema_version" (run.json,
// launch.json): parse, require an object, read and check the version against this
// reader's. Messages start with `source` (the file, or host:path).
//
// Thread-safety: stateless.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "backend/protocol/status.h"
#include "backend/protocol/wire/event_codec.h"
#include "backend/protocol/wire/json_fields.h"

namespace fs::protocol {

inline StatusOr<nlohmann::json> parseVersionedDocument(std::string_view text, const std::string& source,
                                                       SchemaVersion ours) {
  auto parsed = json_fields::parseObject(text, source);
  if (!parsed) return parsed.status();
  nlohmann::json& obj = parsed.value();
  auto v = obj.find("schema_version");
  if (v == obj.end()) return Status::corruption(source + ": missing required field 'schema_version'");
  if (!v->is_string()) {
    return Status::corruption(source + ": field 'schema_version' is " + json_fields::brief(*v) +
                              ", expected a string \"MAJOR.MINOR\"");
  }
  auto version = parseSchemaVersion(v->get_ref<const std::string&>());
  if (!version) return Status::corruption(source + ": " + version.status().message());
  if (Status compatible = checkSchemaVersion(version.value(), ours, source); !compatible) return compatible;
  return parsed;
}

}  // namespace fs::protocol
