// Hand-made LAION and MMC4 shards for openflamingo_data_oracle_test, built
// from the pictures and captions of make-synthetic's shards: the cases its
// generated shards do not reach (long and odd captions, png / jpeg members,
// competing MMC4 images, undecodable images, odd sentences).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "backend/data/documents/base64.h"
#include "backend/data/image/image_codec.h"
#include "backend/data/shards/tar_samples.h"
#include "backend/data/shards/tar_writer.h"

namespace fs::data::test {

using nlohmann::json;
using protocol::StatusOr;

// Base64 of `bytes` zero bytes: valid to MMC4's size rule, not a picture.
inline std::string zerosBase64(size_t bytes) {
  std::string s;
  for (size_t i = 0; i < bytes / 3; ++i) s += "AAAA";
  if (bytes % 3 == 1) s += "AA==";
  if (bytes % 3 == 2) s += "AAA=";
  return s;
}

// Hand-made MMC4 documents from the generated ones' JPEGs (real pictures
// of at least 11,000 bytes); an empty string on success.
inline std::string writeCraftedMmc4(const std::string& generated, const std::string& path) {
  auto reader = TarSampleReader::open(generated);
  if (!reader) return reader.status().message();
  std::vector<std::string> large;
  while (large.size() < 3) {
    auto s = reader->next();
    if (!s) return "crafted: " + s.status().message();
    if (!s->has_value()) return "crafted: fewer than 3 large pictures in " + generated;
    const Bytes& raw = *(*s)->find("json");
    const json parsed = json::parse(raw.begin(), raw.end());
    for (const auto& info : parsed["image_info"]) {
      const std::string b64 = info["image_base64"];
      auto bytes = decodeBase64Lenient(b64);
      if (!bytes) return "crafted: " + bytes.status().message();
      if (bytes->size() >= 11000 && large.size() < 3) large.push_back(b64);
    }
  }
  const std::string& a = large[0];
  const std::string& b = large[1];
  const std::string& c = large[2];
  const std::string bad = zerosBase64(12000);  // valid by size, not a picture
  const std::string small = zerosBase64(900);
  const json sentences = {"A red square on the left.", "Some filler text here.", "A blue circle below it."};
  const auto doc = [&](const std::vector<json>& images, const json& sim, const json& text) {
    return json{{"text_list", text}, {"image_info", images}, {"similarity_matrix", sim}}.dump();
  };
  const auto img = [](const std::string& b64) { return json{{"image_base64", b64}}; };
  const json odd = {"", " lead", "trail ", "<image> z", "x  y", "<|endofchunk|>", "tab\t", "caf\u00e9 "};
  const auto oddSim = [&](const std::vector<size_t>& best) {
    json sim = json::array();
    for (size_t s : best) {
      std::vector<double> row(odd.size(), 0.1);
      row[s] = 0.3;
      sim.push_back(row);
    }
    return sim;
  };
  const std::vector<std::pair<std::string, std::string>> docs = {
      // Every image's best sentence is its own: 2.0.1 and one-to-one agree.
      {"crafted-distinct",
       doc({img(a), img(b), img(c)}, {{.30, .10, .12}, {.11, .33, .10}, {.12, .10, .29}}, sentences)},
      // An entry without image_base64 is skipped by both.
      {"crafted-no-base64-field", doc({json{{"raw_url", "https://example.invalid/x.jpg"}}, img(b)},
                                      {{.9, .1, .1}, {.1, .1, .3}}, sentences)},
      // A kept image that does not decode rejects the document in both.
      {"crafted-bad-kept-image", doc({img(a), img(bad)}, {{.3, .1, .1}, {.1, .1, .3}}, sentences)},
      // Only images under 11,000 bytes.
      {"crafted-small-only", doc({img(small)}, {{.5, .1, .1}}, sentences)},
      // The text assembly's corners: empty sentences, stray spaces, literal
      // special tokens, a tab, non-ASCII (each image's best sentence is its own).
      {"crafted-odd-sentences-1", doc({img(a), img(b), img(c)}, oddSim({1, 3, 6}), odd)},
      {"crafted-odd-sentences-2", doc({img(a), img(b), img(c)}, oddSim({0, 5, 2}), odd)},
      // A similarity equal to the threshold is kept (the rule is "< threshold: drop").
      {"crafted-at-threshold", doc({img(a), img(b)}, {{.24, .1, .1}, {.1, .1, .3}}, sentences)},
      // Both images' best sentence is sentence 0: 2.0.1 puts two <image>
      // before it; one-to-one gives image 0 sentence 1 (0.28 + 0.35 > 0.30 + 0.10).
      {"crafted-shared-best", doc({img(a), img(b)}, {{.30, .28, .10}, {.35, .10, .10}}, sentences)},
      // Two images, one sentence: 2.0.1 keeps both, one-to-one only the better.
      {"crafted-more-images", doc({img(a), img(b)}, {{.30}, {.40}}, json{"Only one sentence."})},
      // One-to-one assigns image 0 to sentence 1 (0.20, under the threshold,
      // dropped); 2.0.1 keeps it on sentence 0 (its best, 0.30).
      {"crafted-assigned-below", doc({img(a), img(b)}, {{.30, .20, .05}, {.31, .10, .05}}, sentences)},
      // An undecodable image below the threshold: 2.0.1 never decodes it;
      // we decode every image of 11,000 bytes or more (bad_image).
      // (Two kept images, so that no single-image coin decides it.)
      {"crafted-bad-unmatched",
       doc({img(a), img(b), img(bad)}, {{.3, .1, .1}, {.1, .1, .3}, {.1, .1, .1}}, sentences)},
      // Tied best sentences: 2.0.1's argmax takes the first maximum (image 0
      // -> sentence 1, image 1 -> sentence 0; the last maximum would give
      // both sentence 2).
      {"crafted-tied-best", doc({img(a), img(b)}, {{.10, .30, .30}, {.30, .10, .30}}, sentences)},
      // Four images that pass, the fourth undecodable: past max_num_images
      // (3 and 2 here), yet 2.0.1 decodes it (the cut comes after) and so
      // do we, in both modes (bad_image).
      {"crafted-bad-past-cap", doc({img(a), img(b), img(c), img(bad)},
                                   {{.3, .1, .1, .1}, {.1, .3, .1, .1}, {.1, .1, .3, .1}, {.1, .1, .1, .3}},
                                   json{"One.", "Two.", "Three.", "Four."})},
      // No sentence: 2.0.1's argmax of an empty row raises; we reject it too.
      {"crafted-no-sentences", doc({img(a)}, json::array({json::array()}), json::array())},
  };
  auto w = TarWriter::create(path);
  if (!w) return w.status().message();
  for (const auto& [key, text] : docs) {
    if (auto s = w->add(key + ".json", text); !s) return s.message();
  }
  if (auto s = w->finish(); !s) return s.message();
  return {};
}

// Hand-made LAION samples from the generated ones' pictures and captions:
// a caption past max_tokens, whitespace for strip() (ASCII and Unicode),
// an added token and non-ASCII text inside a caption, png and jpeg members,
// jpg before png, and a sample without txt (filtered by both).
inline std::string writeCraftedLaion(const std::string& generated, const std::string& path) {
  auto reader = TarSampleReader::open(generated);
  if (!reader) return reader.status().message();
  std::vector<Bytes> jpgs;
  std::vector<std::string> captions;
  while (jpgs.size() < 9) {
    auto s = reader->next();
    if (!s) return "crafted: " + s.status().message();
    if (!s->has_value()) return "crafted: fewer than 9 samples in " + generated;
    jpgs.push_back(*(*s)->find("jpg"));
    const Bytes& t = *(*s)->find("txt");
    captions.emplace_back(t.begin(), t.end());
  }
  auto png = [&](const Bytes& jpg) -> StatusOr<std::vector<uint8_t>> {
    auto image = decodeImage(jpg);
    if (!image) return image.status();
    return encodePng(image.value());
  };
  auto png3 = png(jpgs[3]), png6 = png(jpgs[6]);
  if (!png3 || !png6) return "crafted: png encode failed";
  const std::string text = captions[0] + " " + captions[1] + " " + captions[2] + " " + captions[3];
  struct Member {
    std::string name;
    std::vector<uint8_t> bytes;
  };
  const auto bytesOf = [](const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); };
  const std::vector<std::vector<Member>> samples = {
      {{"laion-long.jpg", jpgs[0]}, {"laion-long.txt", bytesOf(text)}},
      {{"laion-ascii-space.jpg", jpgs[1]}, {"laion-ascii-space.txt", bytesOf("  \t" + captions[1] + " \n")}},
      {{"laion-unicode-space.jpg", jpgs[2]},
       {"laion-unicode-space.txt", bytesOf("\u00a0" + captions[2] + "\u3000\u2009")}},
      {{"laion-png.png", png3.value()}, {"laion-png.txt", bytesOf(captions[3])}},
      {{"laion-jpeg.jpeg", jpgs[4]}, {"laion-jpeg.txt", bytesOf(captions[4])}},
      {{"laion-jpg-and-png.jpg", jpgs[5]},
       {"laion-jpg-and-png.png", png6.value()},
       {"laion-jpg-and-png.txt", bytesOf(captions[5])}},
      {{"laion-added-token.jpg", jpgs[6]},
       {"laion-added-token.txt", bytesOf("a <image> and an <|endofchunk|> in " + captions[6])}},
      {{"laion-no-text.jpg", jpgs[7]}},
      {{"laion-non-ascii.jpg", jpgs[8]},
       {"laion-non-ascii.txt", bytesOf("caf\u00e9 na\u00efve \u65e5\u672c " + captions[8])}},
  };
  auto w = TarWriter::create(path);
  if (!w) return w.status().message();
  for (const auto& sample : samples) {
    for (const auto& m : sample) {
      if (auto st = w->add(m.name, std::span<const uint8_t>(m.bytes)); !st) return st.message();
    }
  }
  if (auto st = w->finish(); !st) return st.message();
  return {};
}

}  // namespace fs::data::test
