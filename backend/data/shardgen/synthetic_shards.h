// `flamingo-train shards make-synthetic`: real WebDataset shards of generated
// pictures, so the demo, the tests and the benchmarks need no user files.
//
//   <out>/laion-000000.tar ...   samples: <key>.jpg (a real JPEG), <key>.txt (its caption), <key>.json
//   <out>/mmc4-000000.tar ...    samples: <key>.json, an MMC4 document: text_list,
//                                image_info (image_name, image_base64, matched_text_index,
//                                matched_sim), similarity_matrix (images x sentences)
//   <out>/tokenizer/             vocab.json + merges.txt + special_tokens_map.json, an
//                                OPT-style byte-level BPE trained on the generated text
//
// MMC4 documents mix what the real data has: one to max_images pictures, each
// described by one sentence (similarity 0.26-0.36) among filler sentences
// (0.08-0.20); some pictures flat and small, so under the 11,000-byte rule.
// `bad_every` > 0 makes every n-th sample broken (a cut JPEG, bad base64) for
// tests of the drop accounting.
//
// Deterministic: the same options give byte-identical shards.
// Thread-safety: pure function of its options (writes files).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::data {

struct SyntheticShardOptions {
  std::string outDir;
  int laionShards = 4;
  int laionSamplesPerShard = 64;
  int mmc4Shards = 4;
  int mmc4DocsPerShard = 32;
  int imageWidth = 192;  // LAION pictures; MMC4 pictures are the same size
  int imageHeight = 144;
  int maxImagesPerDoc = 3;
  int jpegQuality = 90;
  int badEvery = 0;
  uint64_t seed = 0;
  size_t vocabSize = 128;  // tokenizer length before OpenFlamingo's added tokens
  // The tokenizer's corpus: the text of every sample written and, up to these
  // counts, of the samples after them (drawn as they would be, not written),
  // so that a run writing one kind only gets the tokenizer of both.
  int tokenizerLaionSamples = 0;
  int tokenizerMmc4Docs = 0;
  bool writeTokenizer = true;  // false: shards only (a further set beside a tokenizer written once)
};

struct SyntheticShardsSummary {
  // Brace patterns, "" when none were written: for people (`shards make-synthetic` prints them).
  // A pattern is read as a shard spec ("::" lists, pipe:); code that reads the shards it wrote
  // under a directory it did not choose uses the file lists (NOTE [Run directory text]).
  std::string laionShards;
  std::string mmc4Shards;
  std::vector<std::string> laionFiles;  // the shard files, in order (syntheticShardFiles)
  std::vector<std::string> mmc4Files;
  std::string tokenizerDir;
  int64_t laionSamples = 0;
  int64_t mmc4Documents = 0;
  int64_t mmc4Images = 0;
  int64_t bytes = 0;  // all shards together
};

// The paths of the `count` shards of `kind` ("laion" or "mmc4") written into `outDir`:
// <outDir>/<kind>-000000.tar, ...
std::vector<std::string> syntheticShardFiles(const std::string& outDir, const std::string& kind, int count);

// `progress` (may be empty) is called after each shard with its path.
protocol::StatusOr<SyntheticShardsSummary> writeSyntheticShards(
    const SyntheticShardOptions& options, const std::function<void(const std::string&)>& progress = {});

}  // namespace fs::data
