#include "backend/data/shardgen/synthetic_shards.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "backend/data/rng.h"
#include "backend/data/shardgen/base64_encode.h"
#include "backend/data/shardgen/bpe_trainer.h"
#include "backend/data/shardgen/picture.h"
#include "backend/data/shards/tar_writer.h"

namespace fs::data {

using protocol::Status;
using protocol::StatusOr;

namespace {

constexpr uint64_t kLaionTag = 0x4C41494FULL;  // "LAIO"
constexpr uint64_t kMmc4Tag = 0x4D4D4334ULL;   // "MMC4"

std::string shardName(const char* prefix, int index) {
  char name[64];
  std::snprintf(name, sizeof name, "%s-%06d.tar", prefix, index);
  return name;
}

std::string pattern(const std::string& dir, const char* prefix, int count) {
  if (count == 1) return (std::filesystem::path(dir) / shardName(prefix, 0)).string();
  char braces[64];
  std::snprintf(braces, sizeof braces, "%s-{000000..%06d}.tar", prefix, count - 1);
  return (std::filesystem::path(dir) / braces).string();
}

StatusOr<std::vector<uint8_t>> pictureJpeg(const Picture& p, int quality) {
  return encodeJpeg(p.image, quality);
}

struct Corpus {
  std::vector<std::string> texts;
};

class ShardSet {
 public:
  ShardSet(const SyntheticShardOptions& o, const char* prefix,
           const std::function<void(const std::string&)>& progress)
      : o_(o), prefix_(prefix), progress_(progress) {}

  Status open(int index) {
    auto w = TarWriter::create((std::filesystem::path(o_.outDir) / shardName(prefix_, index)).string());
    if (!w) return w.status();
    writer_.emplace(std::move(w.value()));
    return Status::ok();
  }
  Status add(const std::string& name, std::string_view bytes) { return writer_->add(name, bytes); }
  Status add(const std::string& name, const std::vector<uint8_t>& bytes) { return writer_->add(name, bytes); }
  StatusOr<int64_t> close() {
    if (Status s = writer_->finish(); !s) return s;
    const std::string path = writer_->path();
    writer_.reset();
    if (progress_) progress_(path);
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    return ec ? int64_t{0} : static_cast<int64_t>(size);
  }

 private:
  const SyntheticShardOptions& o_;
  const char* prefix_;
  const std::function<void(const std::string&)>& progress_;
  std::optional<TarWriter> writer_;
};

Status writeLaion(const SyntheticShardOptions& o, SyntheticShardsSummary& sum, Corpus& corpus,
                  const std::function<void(const std::string&)>& progress) {
  ShardSet set(o, "laion", progress);
  int64_t index = 0;
  for (int shard = 0; shard < o.laionShards; ++shard) {
    if (Status s = set.open(shard); !s) return s;
    for (int i = 0; i < o.laionSamplesPerShard; ++i, ++index) {
      Rng rng(mixKey({kLaionTag, o.seed, static_cast<uint64_t>(index)}));
      const Picture p = drawPicture(rng, o.imageWidth, o.imageHeight, 10);
      const std::string caption = describePicture(p, rng);
      corpus.texts.push_back(caption);
      auto jpeg = pictureJpeg(p, o.jpegQuality);
      if (!jpeg) return jpeg.status();
      if (o.badEvery > 0 && (index + 1) % o.badEvery == 0) jpeg->resize(jpeg->size() / 3);  // cut mid-scan
      char key[32];
      std::snprintf(key, sizeof key, "%09lld", static_cast<long long>(index));
      const nlohmann::json meta = {{"caption", caption}, {"width", o.imageWidth}, {"height", o.imageHeight}};
      if (Status s = set.add(std::string(key) + ".jpg", jpeg.value()); !s) return s;
      if (Status s = set.add(std::string(key) + ".txt", caption); !s) return s;
      if (Status s = set.add(std::string(key) + ".json", meta.dump()); !s) return s;
    }
    auto bytes = set.close();
    if (!bytes) return bytes.status();
    sum.bytes += bytes.value();
  }
  sum.laionSamples = index;
  if (o.laionShards > 0) sum.laionShards = pattern(o.outDir, "laion", o.laionShards);
  sum.laionFiles = syntheticShardFiles(o.outDir, "laion", o.laionShards);
  return Status::ok();
}

StatusOr<nlohmann::json> mmc4Document(const SyntheticShardOptions& o, int64_t index, Corpus& corpus,
                                      int64_t& images) {
  Rng rng(mixKey({kMmc4Tag, o.seed, static_cast<uint64_t>(index)}));
  const auto n = static_cast<size_t>(rng.range(1, std::max(1, o.maxImagesPerDoc)));
  const auto fillers = static_cast<size_t>(rng.range(1, 3));
  // Sentence order: described pictures and fillers, shuffled.
  std::vector<int64_t> order;  // >= 0: picture index, -1: filler
  for (size_t i = 0; i < n; ++i) order.push_back(static_cast<int64_t>(i));
  for (size_t i = 0; i < fillers; ++i) order.push_back(-1);
  for (size_t i = order.size() - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
  std::vector<Picture> pictures;
  std::vector<bool> large;
  // Large pictures must pass MMC4's 11,000-byte rule whatever size was asked
  // for; small ones (flat, 48x36) must not.
  const int w = std::max(o.imageWidth, 200), h = std::max(o.imageHeight, 150);
  for (size_t i = 0; i < n; ++i) {
    large.push_back(!rng.coin(0.15));
    pictures.push_back(large.back() ? drawPicture(rng, w, h, 24) : drawPicture(rng, 48, 36, 0));
  }
  nlohmann::json textList = nlohmann::json::array();
  std::vector<size_t> sentenceOf(n);
  for (size_t s = 0; s < order.size(); ++s) {
    const std::string text =
        order[s] >= 0 ? describePicture(pictures[static_cast<size_t>(order[s])], rng) : fillerSentence(rng);
    if (order[s] >= 0) sentenceOf[static_cast<size_t>(order[s])] = s;
    corpus.texts.push_back(text);
    textList.push_back(text);
  }
  const bool weak = rng.coin(0.1);  // a document whose pictures match nothing well
  nlohmann::json info = nlohmann::json::array();
  nlohmann::json sim = nlohmann::json::array();
  for (size_t i = 0; i < n; ++i) {
    nlohmann::json row = nlohmann::json::array();
    for (size_t s = 0; s < order.size(); ++s) {
      const double v =
          s == sentenceOf[i] && !weak ? 0.26 + 0.10 * rng.unitFloat() : 0.08 + 0.12 * rng.unitFloat();
      row.push_back(static_cast<double>(static_cast<float>(v)));
    }
    auto jpeg = pictureJpeg(pictures[i], large[i] ? std::max(o.jpegQuality, 90) : 60);
    if (!jpeg) return jpeg.status();
    if (large[i] && jpeg->size() < 11000) {
      return Status::invalidArgument("make-synthetic: a " + std::to_string(w) + "x" + std::to_string(h) +
                                     " picture encoded to only " + std::to_string(jpeg->size()) +
                                     " bytes, under MMC4's 11,000-byte rule");
    }
    std::string b64 = encodeBase64(jpeg.value());
    if (o.badEvery > 0 && (index + 1) % o.badEvery == 0 && i == 0)
      b64.insert(b64.size() / 2, "\xc3\xa9");  // not ASCII: b64decode refuses it
    char name[48];
    std::snprintf(name, sizeof name, "%09lld_%zu.jpg", static_cast<long long>(index), i);
    info.push_back({{"image_name", name},
                    {"raw_url", std::string("https://example.invalid/") + name},
                    {"matched_text_index", sentenceOf[i]},
                    {"matched_sim", row[sentenceOf[i]]},
                    {"image_base64", b64}});
    sim.push_back(row);
    ++images;
  }
  return nlohmann::json{{"text_list", textList},
                        {"image_info", info},
                        {"similarity_matrix", sim},
                        {"url", "https://example.invalid/doc/" + std::to_string(index)}};
}

Status writeMmc4(const SyntheticShardOptions& o, SyntheticShardsSummary& sum, Corpus& corpus,
                 const std::function<void(const std::string&)>& progress) {
  ShardSet set(o, "mmc4", progress);
  int64_t index = 0;
  for (int shard = 0; shard < o.mmc4Shards; ++shard) {
    if (Status s = set.open(shard); !s) return s;
    for (int i = 0; i < o.mmc4DocsPerShard; ++i, ++index) {
      auto doc = mmc4Document(o, index, corpus, sum.mmc4Images);
      if (!doc) return doc.status();
      char key[32];
      std::snprintf(key, sizeof key, "%09lld", static_cast<long long>(index));
      if (Status s = set.add(std::string(key) + ".json", doc->dump()); !s) return s;
    }
    auto bytes = set.close();
    if (!bytes) return bytes.status();
    sum.bytes += bytes.value();
  }
  sum.mmc4Documents = index;
  if (o.mmc4Shards > 0) sum.mmc4Shards = pattern(o.outDir, "mmc4", o.mmc4Shards);
  sum.mmc4Files = syntheticShardFiles(o.outDir, "mmc4", o.mmc4Shards);
  return Status::ok();
}

}  // namespace

std::vector<std::string> syntheticShardFiles(const std::string& outDir, const std::string& kind, int count) {
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i)
    out.push_back((std::filesystem::path(outDir) / shardName(kind.c_str(), i)).string());
  return out;
}

StatusOr<SyntheticShardsSummary> writeSyntheticShards(
    const SyntheticShardOptions& o, const std::function<void(const std::string&)>& progress) {
  if (o.outDir.empty()) return Status::invalidArgument("make-synthetic: no output directory");
  if (o.laionShards < 0 || o.mmc4Shards < 0 || o.laionSamplesPerShard < 1 || o.mmc4DocsPerShard < 1 ||
      o.imageWidth < 8 || o.imageHeight < 8 || o.maxImagesPerDoc < 1) {
    return Status::invalidArgument(
        "make-synthetic: shard counts must be >= 0, samples per shard >= 1, "
        "pictures at least 8x8 and max images >= 1");
  }
  std::error_code ec;
  std::filesystem::create_directories(o.outDir, ec);
  if (ec) return Status::ioError(o.outDir + ": cannot create: " + ec.message());
  SyntheticShardsSummary sum;
  Corpus corpus;
  if (Status s = writeLaion(o, sum, corpus, progress); !s) return s;
  if (Status s = writeMmc4(o, sum, corpus, progress); !s) return s;
  if (!o.writeTokenizer) return sum;
  for (int64_t index = sum.laionSamples; index < o.tokenizerLaionSamples; ++index) {
    Rng rng(mixKey({kLaionTag, o.seed, static_cast<uint64_t>(index)}));
    const Picture p = drawPicture(rng, o.imageWidth, o.imageHeight, 10);
    corpus.texts.push_back(describePicture(p, rng));
  }
  int64_t notWrittenImages = 0;
  for (int64_t index = sum.mmc4Documents; index < o.tokenizerMmc4Docs; ++index) {
    if (auto doc = mmc4Document(o, index, corpus, notWrittenImages); !doc) return doc.status();
  }
  auto bpe = trainByteLevelBpe(corpus.texts, {"<s>", "<pad>", "</s>", "<unk>"}, o.vocabSize);
  if (!bpe) return bpe.status();
  sum.tokenizerDir = (std::filesystem::path(o.outDir) / "tokenizer").string();
  if (Status s = writeBpeFiles(bpe.value(), sum.tokenizerDir); !s) return s;
  return sum;
}

}  // namespace fs::data
