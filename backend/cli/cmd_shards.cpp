// shards: tools for WebDataset shards, before a run and instead of a Python
// environment: make-synthetic, inspect, validate, convert-mmc4. Each tool's
// options are a named constant that commands.cpp's table lists with it; the
// long ones draw a progress line on a terminal (progress_line.h).
#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>

#include "backend/cli/args.h"
#include "backend/cli/commands.h"
#include "backend/cli/progress_line.h"
#include "backend/data/drop_ledger.h"
#include "backend/data/shard_check.h"
#include "backend/data/shardgen/convert_mmc4.h"
#include "backend/data/shardgen/synthetic_shards.h"
#include "backend/protocol/config/shard_pattern.h"

namespace fs::cli {

namespace {

using data::DatasetKind;

bool parseInt(const ParsedArgs& a, const std::string& name, int64_t& out, Io& io) {
  if (!a.has(name)) return true;
  try {
    size_t used = 0;
    out = std::stoll(a.get(name), &used);
    if (used == a.get(name).size()) return true;
  } catch (...) {
  }
  io.err << "flamingo-train shards: --" << name << " expects an integer, got '" << a.get(name) << "'\n";
  return false;
}

// Options every sample check shares (inspect, validate).
const std::vector<OptionSpec> kCheckOptions = {
    {"type", true, false, "laion|mmc4",
     "Dataset type (default: MMC4 when the json has text_list, else LAION)"},
    {"tokenizer", true, false, "DIR", "Tokenizer files: also tokenise and apply the token rules"},
    {"family", true, false, "NAME", "Tokenizer family: opt | gpt_neox | mpt | llama (default opt)"},
    {"image-size", true, false, "N", "Vision input size (default 224)"},
    {"max-tokens", true, false, "N", "Tokens per sample (default: laion 32, mmc4 256)"},
    {"max-images", true, false, "N", "MMC4 images kept per document (default 6)"},
    {"min-images", true, false, "N", "MMC4 minimum <image> tokens (default 1)"},
    {"threshold", true, false, "X", "MMC4 similarity threshold (default 0.24, the released recipe's)"},
    {"help", false, false, "", "Show this help"},
};

std::optional<data::ShardCheckOptions> checkOptions(const ParsedArgs& a, Io& io) {
  data::ShardCheckOptions o;
  if (a.has("type")) {
    auto kind = data::datasetKindFromString(a.get("type"));
    if (!kind) {
      io.err << "flamingo-train shards: --type must be laion or mmc4, got '" << a.get("type") << "'\n";
      return std::nullopt;
    }
    o.kind = kind;
  }
  if (!parseInt(a, "image-size", o.imageSize, io) || !parseInt(a, "max-tokens", o.maxTokens, io) ||
      !parseInt(a, "max-images", o.maxNumImages, io) || !parseInt(a, "min-images", o.minNumImages, io)) {
    return std::nullopt;
  }
  if (o.imageSize < 1 || o.maxNumImages < 1 || o.maxTokens < 0) {
    io.err << "flamingo-train shards: --image-size and --max-images must be >= 1\n";
    return std::nullopt;
  }
  if (a.has("threshold")) {
    try {
      o.simThreshold = std::stod(a.get("threshold"));
    } catch (...) {
      io.err << "flamingo-train shards: --threshold expects a number, got '" << a.get("threshold") << "'\n";
      return std::nullopt;
    }
  }
  if (a.has("tokenizer")) {
    auto tok = data::loadTokenizer(a.get("tokenizer"), a.get("family", "opt"));
    if (!tok) {
      io.err << "flamingo-train shards: --tokenizer: " << tok.status().message() << "\n";
      return std::nullopt;
    }
    o.tokenizer = std::move(tok.value());
  }
  return o;
}

int usageError(Io& io, const std::string& sub, const std::string& message) {
  io.err << "flamingo-train shards " << sub << ": " << message << "\n";
  return kExitUsage;
}

}  // namespace

const std::vector<OptionSpec> kShardsMakeSyntheticOptions = {
    {"out", true, false, "DIR", "Output directory (required)"},
    {"laion-shards", true, false, "N", "LAION shards (default 4)"},
    {"laion-samples", true, false, "N", "Samples per LAION shard (default 64)"},
    {"mmc4-shards", true, false, "N", "MMC4 shards (default 4)"},
    {"mmc4-docs", true, false, "N", "Documents per MMC4 shard (default 32)"},
    {"width", true, false, "N", "Picture width (default 192)"},
    {"height", true, false, "N", "Picture height (default 144)"},
    {"max-images", true, false, "N", "Pictures per MMC4 document, at most (default 3)"},
    {"bad-every", true, false, "N", "Break every N-th sample (cut JPEG, bad base64), for tests"},
    {"seed", true, false, "N", "Seed (default 0)"},
    {"help", false, false, "", "Show this help"},
};

const std::vector<OptionSpec> kShardsInspectOptions = [] {
  std::vector<OptionSpec> options = kCheckOptions;
  options.push_back({"limit", true, false, "N", "Samples to print (default 20; 0 = all)"});
  return options;
}();

const std::vector<OptionSpec> kShardsValidateOptions = kCheckOptions;

const std::vector<OptionSpec> kShardsConvertMmc4Options = {
    {"documents", true, false, "PATTERN",
     "MMC4 document files: zips of JSON lines or .jsonl (brace patterns)"},
    {"images", true, false, "DIR", "Downloaded images: DIR/<file index>/<image_name> or DIR/<image_name>"},
    {"out", true, false, "DIR", "Output directory for the shards"},
    {"files-per-shard", true, false, "N", "Start a new shard every N document files (default 1000)"},
    {"docs-per-shard", true, false, "N", "Start a new shard every N documents instead"},
    {"dry-run", false, false, "", "Count documents and images, write nothing"},
    {"help", false, false, "", "Show this help"},
};

int runShardsMakeSynthetic(const std::vector<std::string>& args, Io& io) {
  auto a = parseArgs(args, kShardsMakeSyntheticOptions);
  if (!a) return usageError(io, "make-synthetic", a.status().message());
  if (a->has("help")) {
    io.out << "usage: flamingo-train shards make-synthetic --out DIR [options]\n\n"
              "Writes LAION and MMC4 tar shards of generated pictures (real JPEGs) with captions and\n"
              "interleaved documents, and a small BPE tokenizer for them (DIR/tokenizer).\n\n"
           << formatOptions(kShardsMakeSyntheticOptions);
    return kExitOk;
  }
  if (!a->has("out")) return usageError(io, "make-synthetic", "--out DIR is required");
  data::SyntheticShardOptions o;
  o.outDir = a->get("out");
  int64_t laionShards = o.laionShards, laionSamples = o.laionSamplesPerShard, mmc4Shards = o.mmc4Shards,
          mmc4Docs = o.mmc4DocsPerShard, width = o.imageWidth, height = o.imageHeight,
          maxImages = o.maxImagesPerDoc, badEvery = 0, seed = 0;
  if (!parseInt(*a, "laion-shards", laionShards, io) || !parseInt(*a, "laion-samples", laionSamples, io) ||
      !parseInt(*a, "mmc4-shards", mmc4Shards, io) || !parseInt(*a, "mmc4-docs", mmc4Docs, io) ||
      !parseInt(*a, "width", width, io) || !parseInt(*a, "height", height, io) ||
      !parseInt(*a, "max-images", maxImages, io) || !parseInt(*a, "bad-every", badEvery, io) ||
      !parseInt(*a, "seed", seed, io)) {
    return kExitUsage;
  }
  o.laionShards = static_cast<int>(laionShards);
  o.laionSamplesPerShard = static_cast<int>(laionSamples);
  o.mmc4Shards = static_cast<int>(mmc4Shards);
  o.mmc4DocsPerShard = static_cast<int>(mmc4Docs);
  o.imageWidth = static_cast<int>(width);
  o.imageHeight = static_cast<int>(height);
  o.maxImagesPerDoc = static_cast<int>(maxImages);
  o.badEvery = static_cast<int>(badEvery);
  o.seed = static_cast<uint64_t>(seed);
  ProgressLine progress(io.err, io.errIsTerminal, "make-synthetic", ProgressLine::Unit::kItems, "shards");
  progress.setTotal(std::max<int64_t>(0, laionShards) + std::max<int64_t>(0, mmc4Shards));
  progress.setResults(io.out);
  int64_t written = 0;
  progress.update(0);
  auto sum = data::writeSyntheticShards(o, [&](const std::string& path) {
    progress.clear();
    io.out << "wrote " << path << "\n";
    progress.update(++written);
  });
  progress.finish();
  if (!sum) {
    io.err << "flamingo-train shards make-synthetic: " << sum.status().message() << "\n";
    return kExitFailure;
  }
  io.out << sum->laionSamples << " LAION samples, " << sum->mmc4Documents << " MMC4 documents with "
         << sum->mmc4Images << " pictures, " << sum->bytes << " bytes\n";
  if (!sum->laionShards.empty()) io.out << "laion shards: " << sum->laionShards << "\n";
  if (!sum->mmc4Shards.empty()) io.out << "mmc4 shards:  " << sum->mmc4Shards << "\n";
  io.out << "tokenizer:    " << sum->tokenizerDir << " (family opt)\n";
  return kExitOk;
}

int runShardsInspect(const std::vector<std::string>& args, Io& io) {
  auto a = parseArgs(args, kShardsInspectOptions);
  if (!a) return usageError(io, "inspect", a.status().message());
  if (a->has("help") || a->positionals.size() != 1) {
    (a->has("help") ? io.out : io.err)
        << "usage: flamingo-train shards inspect SHARD [options]\n\n"
           "Prints the samples of one shard (file or pipe:COMMAND) and their problems.\n\n"
        << formatOptions(kShardsInspectOptions);
    return a->has("help") ? kExitOk : kExitUsage;
  }
  int64_t limit = 20;
  if (!parseInt(*a, "limit", limit, io)) return kExitUsage;
  auto check = checkOptions(*a, io);
  if (!check) return kExitUsage;
  data::SampleChecker checker(*check);
  auto reader = data::TarSampleReader::open(a->positionals[0]);
  if (!reader) {
    io.err << "flamingo-train shards inspect: " << reader.status().message() << "\n";
    return kExitFailure;
  }
  int64_t n = 0, bad = 0;
  ProgressLine progress(io.err, io.errIsTerminal, "inspect", ProgressLine::Unit::kItems, "samples");
  progress.setResults(io.out);
  while (true) {
    progress.update(n);
    auto sample = reader->next();
    if (!sample) {
      progress.finish();
      io.err << "error: " << sample.status().message() << "\n";
      return kExitFailure;
    }
    if (!sample->has_value()) break;
    const auto& s = **sample;
    const auto verdict = checker.check(s);
    bad += verdict.drop.has_value();
    if (limit == 0 || n < limit) {
      progress.clear();
      std::string members;
      for (const auto& [ext, bytes] : s.fields)
        members += " " + ext + "(" + std::to_string(bytes.size()) + ")";
      io.out << s.key << ":" << members << "\n  " << verdict.summary << "\n";
      if (verdict.drop)
        io.out << "  DROPPED " << verdict.drop->reason << ": " << verdict.drop->detail << "\n";
    }
    ++n;
  }
  progress.finish();
  for (const auto& p : reader->problems()) io.out << "problem: " << p << "\n";
  io.out << n << " samples, " << bad << " would be dropped or filtered; tar problems: "
         << (reader->drops().total() ? reader->drops().toString() : "none") << "\n";
  return kExitOk;
}

int runShardsValidate(const std::vector<std::string>& args, Io& io) {
  auto a = parseArgs(args, kShardsValidateOptions);
  if (!a) return usageError(io, "validate", a.status().message());
  if (a->has("help") || a->positionals.empty()) {
    (a->has("help") ? io.out : io.err)
        << "usage: flamingo-train shards validate SHARDS... [options]\n\n"
           "Reads every sample of the shards (brace patterns, '::' lists, pipe:COMMAND) with the training\n"
           "pipeline's rules and prints counts per reason. Exit 1 when any sample is broken.\n\n"
        << formatOptions(kShardsValidateOptions);
    return a->has("help") ? kExitOk : kExitUsage;
  }
  auto check = checkOptions(*a, io);
  if (!check) return kExitUsage;
  data::SampleChecker checker(*check);
  std::map<std::string, int64_t> totals;
  int64_t samples = 0, ok = 0, broken = 0, shards = 0;
  std::vector<std::vector<std::string>> lists;
  int64_t shardCount = 0;
  for (const auto& spec : a->positionals) {
    auto list = protocol::expandShards(spec);
    if (!list) {
      io.err << "flamingo-train shards validate: " << list.status().message() << "\n";
      return kExitUsage;
    }
    shardCount += static_cast<int64_t>(list->size());
    lists.push_back(std::move(list.value()));
  }
  ProgressLine progress(io.err, io.errIsTerminal, "validate", ProgressLine::Unit::kItems, "shards");
  progress.setTotal(shardCount);
  progress.setResults(io.out);
  for (const auto& list : lists) {
    for (const auto& url : list) {
      ++shards;
      std::map<std::string, int64_t> counts;
      int64_t n = 0;
      auto reader = data::TarSampleReader::open(url);
      if (!reader) {
        progress.clear();
        io.out << url << ": unreadable: " << reader.status().message() << "\n";
        ++totals["unreadable_shard"];
        ++broken;
        continue;
      }
      while (true) {
        auto sample = reader->next();
        if (!sample) {
          ++counts["unreadable_shard"];
          progress.clear();
          io.out << url << ": " << sample.status().message() << "\n";
          break;
        }
        if (!sample->has_value()) break;
        ++n;
        progress.update(shards - 1, std::to_string(samples + n) + " samples");
        const auto verdict = checker.check(**sample);
        if (verdict.drop) {
          ++counts[verdict.drop->reason];
        } else {
          ++ok;
        }
      }
      for (const auto r : {data::DropReason::kUnsafeName, data::DropReason::kTooLarge,
                           data::DropReason::kCorruptTar, data::DropReason::kEmptyShard}) {
        if (reader->drops()[r] > 0)
          counts[std::string(data::dropReasonName(r))] += static_cast<int64_t>(reader->drops()[r]);
      }
      samples += n;
      std::string line;
      for (const auto& [reason, c] : counts) {
        line += " " + reason + "=" + std::to_string(c);
        totals[reason] += c;
        if (!data::isFilterReason(reason)) broken += c;
      }
      progress.clear();
      io.out << url << ": " << n << " samples" << (line.empty() ? ", all good" : ":" + line) << "\n";
      for (const auto& p : reader->problems()) io.out << "  " << p << "\n";
      progress.update(shards, std::to_string(samples) + " samples");
    }
  }
  progress.finish();
  io.out << "\n"
         << shards << " shard(s), " << samples << " samples: " << ok << " train, " << broken << " broken";
  for (const auto& [reason, c] : totals) {
    io.out << "\n  " << reason << " " << c
           << (data::isFilterReason(reason) ? " (filtered by a dataset rule)" : "");
  }
  io.out << "\n";
  return broken > 0 ? kExitFailure : kExitOk;
}

int runShardsConvertMmc4(const std::vector<std::string>& args, Io& io) {
  auto a = parseArgs(args, kShardsConvertMmc4Options);
  if (!a) return usageError(io, "convert-mmc4", a.status().message());
  if (a->has("help")) {
    io.out << "usage: flamingo-train shards convert-mmc4 --documents PATTERN --images DIR --out DIR "
              "[options]\n\n"
              "Turns MMC4's documents and downloaded images into shards for the mmc4 dataset type.\n\n"
           << formatOptions(kShardsConvertMmc4Options);
    return kExitOk;
  }
  data::ConvertMmc4Options o;
  o.documents = a->get("documents");
  o.imagesDir = a->get("images");
  o.outDir = a->get("out");
  o.dryRun = a->has("dry-run");
  if (!parseInt(*a, "files-per-shard", o.filesPerShard, io) ||
      !parseInt(*a, "docs-per-shard", o.docsPerShard, io)) {
    return kExitUsage;
  }
  ProgressLine progress(io.err, io.errIsTerminal, "convert-mmc4", ProgressLine::Unit::kItems, "files");
  progress.setResults(io.out);
  o.onProgress = [&](int64_t filesDone, int64_t filesTotal, int64_t documents) {
    progress.setTotal(filesTotal);
    progress.update(filesDone, std::to_string(documents) + " documents");
  };
  auto sum = data::convertMmc4(o, [&](const std::string& line) {
    progress.clear();
    io.out << line << "\n";
  });
  progress.finish();
  if (!sum) {
    io.err << "flamingo-train shards convert-mmc4: " << sum.status().message() << "\n";
    return kExitFailure;
  }
  for (const auto& p : sum->problems) io.out << "problem: " << p << "\n";
  io.out << (o.dryRun ? "dry run: " : "") << sum->files << " file(s), " << sum->documents << " documents ("
         << sum->badLines << " bad lines); images: " << sum->imagesFound << " found, " << sum->imagesMissing
         << " missing, " << sum->imagesUnreadable << " unreadable, " << sum->imagesUnsafeName
         << " with unsafe names; " << sum->shardsWritten << " shard(s) written, " << sum->bytesWritten
         << " bytes\n";
  return kExitOk;
}

}  // namespace fs::cli
