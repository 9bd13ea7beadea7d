// A run as TensorBoard event files: `tensorboard --logdir OUT_DIR` shows it as one
// run, every numeric series a scalar chart (tags: NOTE [Series names] in series.h)
// and the run config under the text tab.
//
// NOTE [One event file per run]
// TensorBoard treats one folder as one run and merges every event file in it, so
// one file holds everything, memory of every rank included (tags
// memory/rank<r>/<field>: TensorBoard's tag filter "memory/rank1" shows one rank,
// "rss_bytes" one field across ranks). Files per rank in subfolders would make each
// rank a run of its own, with the losses missing from all but one.
//
// File: OUT_DIR/events.out.tfevents.<unix seconds now>.<host name> (TensorBoard's
// name pattern), TFRecord framing (tfrecord.h) of Event protobufs
// (tensorboard_event.proto):
//   1. file_version "brain.Event:2", wall time of the run's first event;
//   2. the config (config.yaml, indented four spaces so TensorBoard's Markdown shows
//      it verbatim) as tag "config", text plugin, a DT_STRING scalar tensor, step 0;
//   3. one Event per telemetry event with numbers: step = the event's step, wall
//      time = its `t` in seconds, one simple_value (float32) per series point.
// OUT_DIR is created when missing (and removed again if the export fails or is
// cancelled while it is still empty). Event files already in OUT_DIR are refused
// unless options.force, which removes them once the new file is in place.
//
// Thread-safety: stateless; callbacks run on the calling thread.
#pragma once

#include <filesystem>
#include <string>

#include "backend/export/export_options.h"
#include "backend/protocol/status.h"

namespace fs::exporter {

inline constexpr std::string_view kTfEventsPrefix = "events.out.tfevents.";
inline constexpr std::string_view kTfFileVersion = "brain.Event:2";
inline constexpr std::string_view kConfigTag = "config";

// The config text as the text plugin shows it: every line indented four spaces.
std::string configAsMarkdown(std::string_view yaml);

protocol::StatusOr<ExportReport> exportTensorBoard(const std::filesystem::path& run_dir,
                                                   const std::filesystem::path& out_dir,
                                                   const ExportOptions& options = {});

}  // namespace fs::exporter
