// FastEventDecoder: decodes the two line types that make up nearly every events.jsonl,
// `step` and `memory` (both come every telemetry interval), with simdjson's on-demand
// API, about 20x faster than the protocol decoder, and declines everything else.
//
// NOTE [Fast decode path]
// protocol::decodeEventLine (nlohmann-json) stays the one definition of the wire
// (docs/telemetry.md). This decoder is an accelerator for the line types that make up
// nearly every file: when it returns kStep (kMemory), the record holds exactly what the
// protocol decoder would have produced for that line (same values, same NaNs, same map
// contents); in any other case it returns kNotHandled and the caller must give the
// line to the protocol decoder, which then decides (event of another type, skipped
// unknown type, or an error with its usual message). It declines, rather than guess, on:
//   - any other type, a version whose major is not this reader's;
//   - any field the protocol decoder would reject (missing, wrong type, out of range)
//     so every error message comes from one place;
//   - anything where two JSON libraries might disagree: a backslash or control byte
//     anywhere in the line, a duplicate key, an integer written as a float (3.0), a
//     number simdjson cannot represent, an unknown field holding an object or array,
//     trailing content after the object, a line over kMaxLineBytes.
// Field names and which are required come from the protocol's tables
// (backend/protocol/wire/event_fields.h, NOTE [Event field tables]), the ones
// protocol::decodeEventLine reads by; only the binding to StepRecord is here.
// tests/app/monitor/fast_event_decoder_test.cpp checks both decoders agree on many
// encoded step and memory events with odd values.
//
// Thread-safety: not thread-safe; one decoder per thread (it owns a simdjson parser).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "app/monitor/step_record.h"

namespace fs::app {

class FastEventDecoder {
 public:
  enum class Result { kStep, kMemory, kNotHandled };

  // Bytes that must be readable (any value) after the end of a line given to
  // decodePadded(); simdjson reads ahead by up to this much.
  static std::size_t padding();
  // Longer lines go to the protocol decoder (they are not step events in practice).
  static constexpr std::size_t kMaxLineBytes = 1u << 20;

  FastEventDecoder();
  ~FastEventDecoder();
  FastEventDecoder(const FastEventDecoder&) = delete;
  FastEventDecoder& operator=(const FastEventDecoder&) = delete;

  // `line` without its '\n' (a trailing '\r' is declined). On kStep, *step holds the
  // event; on kMemory, *memory (a MemoryEvent; memory lines are declined when it is
  // null); on kNotHandled, both are unspecified.
  // REQUIRES: padding() bytes after line.data() + line.size() are readable.
  Result decodePadded(std::string_view line, StepRecord* step, protocol::Event* memory = nullptr);
  // The same for a line without guaranteed padding: copies it first.
  Result decode(std::string_view line, StepRecord* step, protocol::Event* memory = nullptr);

 private:
  Result decodeMemoryPadded(std::string_view line, protocol::Event* out);

  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string scratch_;
};

}  // namespace fs::app
