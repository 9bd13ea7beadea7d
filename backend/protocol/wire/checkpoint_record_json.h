// Internal: how the checkpoint records' carrier types (checkpoint_record.h)
// read and write through json_fields: Bytes as lower-case hex, JsonText<R> as
// a string holding R's JSON document. Found by argument-dependent lookup from
// json_fields' walkers. Only the protocol's .cpp files include this header.
//
// Thread-safety: pure functions.
#pragma once

#include "backend/protocol/wire/checkpoint_record.h"
#include "backend/protocol/wire/json_fields.h"

namespace fs::protocol {

json_fields::Json toJson(const Bytes& bytes);
std::string fromJson(const json_fields::Json& j, Bytes& out);

template <class R>
json_fields::Json toJson(const JsonText<R>& text) {
  return json_fields::Json(encodeJsonText(text.value));
}

template <class R>
std::string fromJson(const json_fields::Json& j, JsonText<R>& out) {
  if (!j.is_string()) return "expected a string holding a JSON object";
  Status s = decodeJsonText(j.get_ref<const std::string&>(), out.value);
  return s ? "" : "holds a record with a problem: " + s.message();
}

}  // namespace fs::protocol
