// bench/data: the shard pipeline's throughput on shards written by
// `flamingo-train shards make-synthetic`, and the raw JPEG decode rate of the
// same images (the pipeline's limit).
//
//   bench_data_pipeline pipeline DIR laion|mmc4 WORKERS SAMPLES [BATCH]
//       full pipeline (read, decode, preprocess 224, tokenize, collate):
//       prints samples_per_s=
//   bench_data_pipeline decode DIR laion|mmc4 SAMPLES
//       decodeImageInto (one reused buffer) of every jpg (LAION) / every image_base64 over 10 KB
//       (MMC4) in the shards, one thread, bytes already in memory:
//       prints images_per_s= and samples_per_s= (MMC4: documents)
//   bench_data_pipeline preprocess DIR laion|mmc4 SAMPLES
//       as decode, then CLIP preprocessing to 224 into a batch-sized ring of
//       64 outputs (as the workers write into batch tensors): prints the
//       decode and preprocess milliseconds per image apart
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "backend/data/documents/mmc4_document.h"
#include "backend/data/image/clip_preprocess.h"
#include "backend/data/image/image_codec.h"
#include "backend/data/shard_source.h"
#include "backend/protocol/config/config_types.h"
#include "backend/protocol/config/config_yaml.h"
#include "backend/protocol/config/shard_pattern.h"

namespace {

using namespace fs;
using Clock = std::chrono::steady_clock;

std::string pattern(const std::string& dir, const std::string& kind) {
  return dir + "/" + kind + "-{000000..000003}.tar";
}

int pipeline(const std::string& dir, const std::string& kind, int64_t workers, int64_t samples,
             int64_t batch) {
  auto load = protocol::loadConfigFile(std::string(FS_SOURCE_DIR) + "/resources/presets/tiny.yaml");
  if (!load.ok()) return 1;
  protocol::RunConfig c = load.config;
  c.data.source = "shards";
  c.model.vision.image_size = 224;
  c.data.datasets.erase(c.data.datasets.begin() + (kind == "laion" ? 1 : 0));
  auto& d = c.data.datasets.front();
  d.shards = pattern(dir, kind);
  d.workers = workers;
  d.batch_size = batch;
  d.samples_per_epoch = samples;
  d.max_tokens = kind == "laion" ? 32 : 256;
  d.max_num_images = 6;
  d.textsim_threshold = 0.24;
  c.model.lm.max_positions = 512;
  auto tok = data::loadTokenizer(dir + "/tokenizer", "opt");
  if (!tok) {
    std::fprintf(stderr, "%s\n", tok.status().message().c_str());
    return 1;
  }
  auto src =
      data::ShardSource::create(c, 0, 1, std::shared_ptr<const data::Tokenizer>(std::move(tok.value())));
  if (!src) {
    std::fprintf(stderr, "%s\n", src.status().message().c_str());
    return 1;
  }
  const auto t0 = Clock::now();
  int64_t n = 0;
  while (true) {
    auto b = (*src)->next();
    if (!b) {
      std::fprintf(stderr, "%s\n", b.status().message().c_str());
      return 1;
    }
    if (!b.value()) break;
    n += b.value()->batches.front().samples;
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  const auto drops = (*src)->dropCounts().begin()->second;
  std::printf(
      "kind=%s workers=%lld samples=%lld seconds=%.3f samples_per_s=%.1f filtered=%lld dropped=%lld\n",
      kind.c_str(), static_cast<long long>(workers), static_cast<long long>(n), s, n / s,
      static_cast<long long>(drops.filtered), static_cast<long long>(drops.dropped));
  return 0;
}

// The image bytes of the first `samples` samples, per sample; none when the
// shards cannot be read (the reason is printed).
std::vector<std::vector<std::string>> readImages(const std::string& dir, const std::string& kind,
                                                 int64_t samples) {
  std::vector<std::vector<std::string>> images;
  const auto urls = protocol::expandShards(pattern(dir, kind));
  if (!urls) {
    std::fprintf(stderr, "%s\n", urls.status().message().c_str());
    return {};
  }
  for (const auto& url : *urls) {
    auto reader = data::TarSampleReader::open(url);
    if (!reader) {
      std::fprintf(stderr, "%s\n", reader.status().message().c_str());
      return {};
    }
    while (static_cast<int64_t>(images.size()) < samples) {
      auto s = reader->next();
      if (!s || !s->has_value()) break;
      std::vector<std::string> sampleImages;
      if (kind == "laion") {
        const auto* jpg = (**s).find("jpg");
        if (jpg) sampleImages.emplace_back(jpg->begin(), jpg->end());
      } else {
        const auto* json = (**s).find("json");
        auto doc = data::parseMmc4Document(
            std::string_view(reinterpret_cast<const char*>(json->data()), json->size()));
        if (doc.isOk()) {
          for (const auto& img : doc.value().images) {
            if (img && data::isValidMmc4ImageSize(img->size())) sampleImages.push_back(*img);
          }
        }
      }
      images.push_back(std::move(sampleImages));
    }
  }
  return images;
}

int decode(const std::string& dir, const std::string& kind, int64_t samples) {
  const auto images = readImages(dir, kind, samples);
  if (images.empty()) return 1;
  int64_t count = 0;
  data::RgbImage img;  // reused, as the pipeline's workers do
  const auto t0 = Clock::now();
  for (const auto& sample : images) {
    for (const auto& bytes : sample) {
      count +=
          data::decodeImageInto({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, img).isOk();
    }
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("kind=%s decode images=%lld samples=%zu seconds=%.3f images_per_s=%.1f samples_per_s=%.1f\n",
              kind.c_str(), static_cast<long long>(count), images.size(), s, count / s, images.size() / s);
  return 0;
}

int preprocess(const std::string& dir, const std::string& kind, int64_t samples) {
  const auto images = readImages(dir, kind, samples);
  if (images.empty()) return 1;
  data::RgbImage img;
  data::ClipPreprocessor clip;
  constexpr std::size_t kRing = 64;
  std::vector<float> ring(kRing * clip.outputSize());
  std::size_t slot = 0;
  int64_t count = 0;
  double decodeS = 0, preprocessS = 0;
  for (const auto& sample : images) {
    for (const auto& bytes : sample) {
      const auto t0 = Clock::now();
      if (!data::decodeImageInto({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, img).isOk())
        continue;
      const auto t1 = Clock::now();
      const std::span<float> out(ring.data() + slot * clip.outputSize(), clip.outputSize());
      if (!clip.run(img, (count & 1) != 0, out).isOk()) return 1;
      preprocessS += std::chrono::duration<double>(Clock::now() - t1).count();
      decodeS += std::chrono::duration<double>(t1 - t0).count();
      slot = (slot + 1) % kRing;
      ++count;
    }
  }
  std::printf("kind=%s preprocess images=%lld decode_ms=%.4f preprocess_ms=%.4f images_per_s=%.1f\n",
              kind.c_str(), static_cast<long long>(count), 1e3 * decodeS / count, 1e3 * preprocessS / count,
              count / (decodeS + preprocessS));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  torch::set_num_threads(1);
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "pipeline" && argc >= 6) {
    return pipeline(argv[2], argv[3], std::stoll(argv[4]), std::stoll(argv[5]),
                    argc > 6 ? std::stoll(argv[6]) : 64);
  }
  if (mode == "decode" && argc >= 5) return decode(argv[2], argv[3], std::stoll(argv[4]));
  if (mode == "preprocess" && argc >= 5) return preprocess(argv[2], argv[3], std::stoll(argv[4]));
  std::fprintf(stderr,
               "usage: bench_data_pipeline pipeline DIR laion|mmc4 WORKERS SAMPLES [BATCH]\n"
               "       bench_data_pipeline decode DIR laion|mmc4 SAMPLES\n"
               "       bench_data_pipeline preprocess DIR laion|mmc4 SAMPLES\n");
  return 2;
}
