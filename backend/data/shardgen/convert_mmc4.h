// `flamingo-train shards convert-mmc4`: MMC4 as downloaded (document files
// plus the images fetched from their URLs) -> WebDataset shards the MMC4
// pipeline reads. What OpenFlamingo's convert_mmc4_to_wds.py does, checked:
//
//   - input: document files (brace patterns joined by "::"), each a zip whose
//     first member is JSON lines (MMC4's release format) or a plain .jsonl;
//   - images: <images>/<file index>/<image_name> (the layout the reference
//     expects: one folder per document file, numbered in list order), or
//     <images>/<image_name>;
//   - every image found is decoded and re-encoded as JPEG (quality 75, PIL's
//     default) into image_info[i].image_base64; an image not found keeps no
//     image_base64, as in the reference, and the pipeline skips it;
//   - output: <out>/000000000.tar, ... one `json` member per document; a new
//     shard every `filesPerShard` input files (the reference's
//     --num_files_per_shard) or every `docsPerShard` documents.
// Unlike the reference: sample keys are "<file>_<line>" (reproducible, not
// uuid4), image names are checked (no "/" or "..": they come from the
// download and become paths), a bad line is counted instead of stopping the
// conversion, and a dry run counts everything without writing.
//
// Thread-safety: one call at a time per output directory.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::data {

struct ConvertMmc4Options {
  std::string documents;  // pattern of .zip / .jsonl files
  std::string imagesDir;
  std::string outDir;
  int64_t filesPerShard = 1000;
  int64_t docsPerShard = 0;  // > 0: roll shards by documents instead
  int jpegQuality = 75;
  bool dryRun = false;
  // Called after every document line (may be empty), for a progress display:
  // input files finished, input files in all, documents read so far.
  std::function<void(int64_t filesDone, int64_t filesTotal, int64_t documents)> onProgress;
};

struct ConvertMmc4Summary {
  int64_t files = 0;
  int64_t documents = 0;
  int64_t badLines = 0;  // not JSON, or no image_info list
  int64_t imagesFound = 0;
  int64_t imagesMissing = 0;
  int64_t imagesUnreadable = 0;  // found but not decodable
  int64_t imagesUnsafeName = 0;
  int64_t shardsWritten = 0;
  int64_t bytesWritten = 0;
  std::vector<std::string> problems;  // the first few, each naming file and line
};

// `progress` (may be empty) gets a line per input file.
protocol::StatusOr<ConvertMmc4Summary> convertMmc4(
    const ConvertMmc4Options& options, const std::function<void(const std::string&)>& progress = {});

}  // namespace fs::data
