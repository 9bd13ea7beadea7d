// Generated pictures with a caption that says what is in them: a gradient
// background and one to three coloured shapes, with sensor-like noise so the
// JPEGs have realistic sizes (MMC4's 11,000-byte rule sees real bytes).
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "backend/data/image/image_codec.h"
#include "backend/data/rng.h"

namespace fs::data {

struct PictureShape {
  std::string color;     // "red", ...
  std::string shape;     // "circle", "square", "bar"
  std::string position;  // "left", "right", "top", "bottom", "middle"
  std::array<int, 3> rgb{};
};

struct Picture {
  RgbImage image;
  std::string background;  // colour name
  std::vector<PictureShape> shapes;
};

// `noise`: amplitude of the per-pixel noise (0 = flat colours, small JPEGs).
Picture drawPicture(Rng& rng, int width, int height, int noise);

// One sentence about the picture, e.g. "a red circle on the left and a blue
// bar at the top, on a green background." (several templates, drawn by rng).
std::string describePicture(const Picture& picture, Rng& rng);

// A sentence about something that is in no picture (MMC4 filler text).
std::string fillerSentence(Rng& rng);

}  // namespace fs::data
