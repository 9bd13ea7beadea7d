#include "backend/data/shardgen/picture.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

namespace fs::data {

namespace {

struct NamedColor {
  const char* name;
  std::array<int, 3> rgb;
};
constexpr std::array<NamedColor, 8> kColors = {{{"red", {220, 40, 40}},
                                                {"green", {40, 170, 60}},
                                                {"blue", {40, 70, 210}},
                                                {"yellow", {235, 215, 50}},
                                                {"purple", {140, 60, 170}},
                                                {"orange", {245, 140, 30}},
                                                {"white", {240, 240, 240}},
                                                {"black", {25, 25, 25}}}};
constexpr std::array<const char*, 3> kShapes = {"circle", "square", "bar"};
constexpr std::array<const char*, 5> kPositions = {"left", "right", "top", "bottom", "middle"};

uint8_t clampByte(int v) {
  return static_cast<uint8_t>(std::clamp(v, 0, 255));
}

// Centre of a position as fractions of the picture.
std::pair<double, double> anchor(const std::string& position) {
  if (position == "left") return {0.25, 0.5};
  if (position == "right") return {0.75, 0.5};
  if (position == "top") return {0.5, 0.25};
  if (position == "bottom") return {0.5, 0.75};
  return {0.5, 0.5};
}

bool inside(const PictureShape& s, double x, double y, double cx, double cy, double r) {
  if (s.shape == "circle") return (x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r;
  if (s.shape == "square") return std::abs(x - cx) <= r && std::abs(y - cy) <= r;
  return std::abs(y - cy) <= r * 0.35 && std::abs(x - cx) <= r * 1.8;  // bar
}

std::string article(const std::string& word) {
  return std::string("aeiou").find(word.front()) == std::string::npos ? "a " : "an ";
}

std::string positionPhrase(const std::string& position) {
  if (position == "middle") return "in the middle";
  if (position == "left" || position == "right") return "on the " + position;
  return "at the " + position;
}

}  // namespace

Picture drawPicture(Rng& rng, int width, int height, int noise) {
  Picture p;
  const auto& bg = kColors[rng.below(kColors.size())];
  const auto& bg2 = kColors[rng.below(kColors.size())];
  p.background = bg.name;
  const auto count = static_cast<size_t>(rng.range(1, 3));
  std::vector<size_t> positions = {0, 1, 2, 3, 4};
  for (size_t i = 0; i < count; ++i) {
    const size_t pick = i + rng.below(positions.size() - i);
    std::swap(positions[i], positions[pick]);
    size_t color = rng.below(kColors.size());
    if (kColors[color].name == p.background) color = (color + 1) % kColors.size();
    p.shapes.push_back({kColors[color].name, kShapes[rng.below(kShapes.size())], kPositions[positions[i]],
                        kColors[color].rgb});
  }
  p.image.width = width;
  p.image.height = height;
  p.image.pixels.resize(static_cast<size_t>(width) * height * 3);
  const double radius = 0.18 * std::min(width, height);
  for (int y = 0; y < height; ++y) {
    const double t = height > 1 ? static_cast<double>(y) / (height - 1) : 0.0;
    uint8_t* row = p.image.row(y);
    for (int x = 0; x < width; ++x) {
      std::array<int, 3> c{};
      for (int k = 0; k < 3; ++k) c[k] = static_cast<int>(bg.rgb[k] * (1 - 0.3 * t) + bg2.rgb[k] * 0.3 * t);
      for (const auto& s : p.shapes) {
        auto [fx, fy] = anchor(s.position);
        if (inside(s, x, y, fx * width, fy * height, radius)) c = s.rgb;
      }
      for (int k = 0; k < 3; ++k) {
        const int n =
            noise > 0 ? static_cast<int>(rng.below(2 * static_cast<uint64_t>(noise) + 1)) - noise : 0;
        row[x * 3 + k] = clampByte(c[k] + n);
      }
    }
  }
  return p;
}

std::string describePicture(const Picture& picture, Rng& rng) {
  std::string parts;
  for (size_t i = 0; i < picture.shapes.size(); ++i) {
    const auto& s = picture.shapes[i];
    if (i > 0) parts += i + 1 == picture.shapes.size() ? " and " : ", ";
    parts += article(s.color) + s.color + " " + s.shape + " " + positionPhrase(s.position);
  }
  switch (rng.below(3)) {
    case 0:
      return parts + " on " + article(picture.background) + picture.background + " background.";
    case 1:
      return "a picture of " + parts + ".";
    default:
      return "there is " + parts + ", the background is " + picture.background + ".";
  }
}

std::string fillerSentence(Rng& rng) {
  static const std::array<const char*, 6> kFiller = {
      "the shapes were drawn by a small program.", "colours and shapes make a simple picture.",
      "this page shows a few pictures.",           "each picture has a background colour.",
      "some shapes are round and some are not.",   "we look at the next picture now."};
  return kFiller[rng.below(kFiller.size())];
}

}  // namespace fs::data
