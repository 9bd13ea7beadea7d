#include "backend/data/documents/mmc4_document.h"

#include <simdjson.h>

#include <algorithm>
#include <sstream>

#include "backend/data/documents/base64.h"
#include "backend/data/documents/linear_assignment.h"

namespace fs::data {
namespace {

constexpr std::string_view kEndOfChunk = "<|endofchunk|>";
constexpr std::string_view kImage = "<image>";

Mmc4Rejection badJson(std::string message) {
  return {Mmc4Reason::kBadJson, std::move(message)};
}

std::string at(std::string_view field, size_t i) {
  return std::string(field) + "[" + std::to_string(i) + "]";
}

// Python's str.replace(old, new[, 1]): one left-to-right pass over the
// original text, matches never overlap and replaced text is not rescanned.
std::string replaceAll(std::string_view text, std::string_view from, std::string_view to,
                       bool firstOnly = false) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (true) {
    const size_t hit = text.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(pos, hit - pos)).append(to);
    pos = hit + from.size();
    if (firstOnly) break;
  }
  out.append(text.substr(pos));
  return out;
}

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

std::optional<Mmc4Rejection> readSentences(const object& root, Mmc4Document* doc) {
  array list;
  if (root.at_key("text_list").get(list)) return badJson("text_list: missing or not an array");
  for (element e : list) {
    std::string_view s;
    if (e.get_string().get(s)) return badJson(at("text_list", doc->sentences.size()) + ": expected a string");
    doc->sentences.emplace_back(s);
  }
  return std::nullopt;
}

std::optional<Mmc4Rejection> readImages(const object& root, Mmc4Document* doc) {
  array infos;
  if (root.at_key("image_info").get(infos)) return badJson("image_info: missing or not an array");
  for (element e : infos) {
    const std::string where = at("image_info", doc->images.size());
    object info;
    if (e.get_object().get(info)) return badJson(where + ": expected an object");
    element field;
    if (info.at_key("image_base64").get(field)) {  // absent: skipped, as the reference does
      doc->images.emplace_back(std::nullopt);
      continue;
    }
    std::string_view text;
    if (field.get_string().get(text)) return badJson(where + ".image_base64: expected a string");
    auto bytes = decodeBase64Lenient(text);
    if (!bytes.isOk())
      return Mmc4Rejection{Mmc4Reason::kBadBase64, where + ".image_base64: " + bytes.status().message()};
    doc->images.emplace_back(std::move(bytes).value());
  }
  return std::nullopt;
}

// The reference never checks the shape (numpy indexes whatever is there); we
// insist on images x sentences so a malformed document names its field.
std::optional<Mmc4Rejection> readSimilarity(const object& root, Mmc4Document* doc) {
  array rows;
  if (root.at_key("similarity_matrix").get(rows))
    return badJson("similarity_matrix: missing or not an array");
  const size_t want = doc->images.size(), cols = doc->sentences.size();
  if (rows.size() != want)
    return badJson("similarity_matrix: " + std::to_string(rows.size()) + " rows, expected " +
                   std::to_string(want) + " (one per image_info entry)");
  doc->similarity.reserve(want * cols);
  size_t r = 0;
  for (element rowElement : rows) {
    const std::string where = at("similarity_matrix", r++);
    array row;
    if (rowElement.get_array().get(row)) return badJson(where + ": expected an array");
    if (row.size() != cols)
      return badJson(where + ": " + std::to_string(row.size()) + " columns, expected " +
                     std::to_string(cols) + " (one per text_list sentence)");
    size_t c = 0;
    for (element x : row) {
      double value = 0;
      if (x.get_double().get(value)) return badJson(at(where, c) + ": expected a number");
      doc->similarity.push_back(value);
      ++c;
    }
  }
  return std::nullopt;
}

}  // namespace

const char* mmc4ReasonName(Mmc4Reason reason) {
  switch (reason) {
    case Mmc4Reason::kBadJson:
      return "bad_json";
    case Mmc4Reason::kBadBase64:
      return "bad_base64";
    case Mmc4Reason::kGptUnsupported:
      return "gpt_unsupported";
    case Mmc4Reason::kNoValidImages:
      return "no_valid_images";
    case Mmc4Reason::kBelowThreshold:
      return "below_threshold";
    case Mmc4Reason::kTooFewImages:
      return "too_few_images";
    case Mmc4Reason::kSingleImageCoin:
      return "single_image_coin";
    case Mmc4Reason::kImageLastToken:
      return "image_last_token";
  }
  return "unknown";
}

Mmc4Result<Mmc4Document> parseMmc4Document(std::string_view json) {
  // One parser per thread: its buffers are reused from document to document.
  thread_local simdjson::dom::parser parser;
  element root;
  if (auto err = parser.parse(json.data(), json.size()).get(root))
    return badJson(std::string("document: not valid JSON (") + simdjson::error_message(err) + ")");
  object obj;
  if (root.get_object().get(obj)) return badJson("document: expected a JSON object");
  element ignored;
  if (!obj.at_key("is_gpt").get(ignored))
    return Mmc4Rejection{Mmc4Reason::kGptUnsupported,
                         "is_gpt: ChatGPT-generated documents are not supported"};
  Mmc4Document doc;
  if (auto r = readSentences(obj, &doc)) return *r;
  if (auto r = readImages(obj, &doc)) return *r;
  if (auto r = readSimilarity(obj, &doc)) return *r;
  return doc;
}

std::string assembleMmc4Text(std::vector<std::string> sentences, std::span<const size_t> prefixed,
                             std::string_view eosText) {
  const std::string prefix = std::string(kEndOfChunk) + std::string(kImage);
  for (size_t ix : prefixed) sentences[ix].insert(0, prefix);
  std::string text;
  for (size_t i = 0; i < sentences.size(); ++i) {
    if (i) text += ' ';
    text += sentences[i];
  }
  // The first chunk has nothing before it to end. Note that a literal
  // "<|endofchunk|>" in an earlier sentence is the one removed, as in the reference.
  text = replaceAll(text, kEndOfChunk, "", /*firstOnly=*/true);
  text = replaceAll(text, " <|endofchunk|>", kEndOfChunk);
  text = replaceAll(text, "<image> ", kImage);
  text = replaceAll(text, " <image>", kImage);
  text.append(kEndOfChunk).append(eosText);
  return text;
}

namespace {

// kOneToOne (OpenFlamingo main): the assignment on the valid rows, the
// threshold on the assigned pairs; every valid image is decoded.
std::optional<Mmc4Rejection> assignOneToOne(const Mmc4Document& doc, const Mmc4Options& options,
                                            Mmc4Plan& plan) {
  // Costs are the negated similarities of the valid rows, as the reference
  // hands them to SciPy; its pairs come back in ascending image order.
  const size_t cols = doc.sentences.size();
  plan.decodeImages = plan.validImages;
  std::vector<double> cost;
  cost.reserve(plan.validImages.size() * cols);
  for (size_t i : plan.validImages)
    for (size_t c = 0; c < cols; ++c) cost.push_back(-doc.similarity[i * cols + c]);
  auto pairs = linearSumAssignment(cost, plan.validImages.size(), cols);
  if (!pairs.isOk()) return badJson("similarity_matrix: " + pairs.status().message());

  for (const AssignedPair& p : pairs.value()) {
    const size_t image = plan.validImages[static_cast<size_t>(p.row)];
    if (doc.similarity[image * cols + static_cast<size_t>(p.col)] < options.simThreshold) continue;
    plan.keptImages.push_back(image);
    plan.keptSentences.push_back(static_cast<size_t>(p.col));
  }
  if (plan.keptImages.empty()) {
    std::ostringstream msg;
    msg << "similarity_matrix: none of " << pairs.value().size() << " assigned image-sentence pairs reaches "
        << "the threshold " << options.simThreshold;
    return Mmc4Rejection{Mmc4Reason::kBelowThreshold, msg.str()};
  }
  return std::nullopt;
}

// kBestSentence (OpenFlamingo 2.0.1): each image its best sentence, the
// first maximum of its row as numpy's argmax; the size rule and the
// threshold on that pair; only the images that pass are decoded.
std::optional<Mmc4Rejection> assignBestSentence(const Mmc4Document& doc, const Mmc4Options& options,
                                                Mmc4Plan& plan) {
  const size_t cols = doc.sentences.size();
  for (size_t i : plan.validImages) {
    // No sentence: 2.0.1's argmax of the empty row raises, for any image
    // with image_base64; all such documents are rejected below.
    if (cols == 0) continue;
    const double* row = doc.similarity.data() + i * cols;
    const size_t best = static_cast<size_t>(std::max_element(row, row + cols) - row);  // the first maximum
    if (row[best] < options.simThreshold) continue;
    plan.decodeImages.push_back(i);
    plan.keptImages.push_back(i);
    plan.keptSentences.push_back(best);
  }
  if (plan.keptImages.empty()) {
    std::ostringstream msg;
    if (cols == 0) {
      msg << "text_list: no sentence for the " << plan.validImages.size() << " valid images";
    } else {
      msg << "similarity_matrix: no valid image's best sentence reaches the threshold "
          << options.simThreshold;
    }
    return Mmc4Rejection{Mmc4Reason::kBelowThreshold, msg.str()};
  }
  return std::nullopt;
}

}  // namespace

Mmc4Result<Mmc4Plan> planMmc4Sample(const Mmc4Document& doc, const Mmc4Options& options) {
  if (doc.similarity.size() != doc.images.size() * doc.sentences.size())
    return badJson("similarity_matrix: " + std::to_string(doc.similarity.size()) +
                   " values, expected images x sentences = " + std::to_string(doc.images.size()) + " x " +
                   std::to_string(doc.sentences.size()));
  Mmc4Plan plan;
  for (size_t i = 0; i < doc.images.size(); ++i)
    if (doc.images[i] && isValidMmc4ImageSize(doc.images[i]->size())) plan.validImages.push_back(i);
  if (plan.validImages.empty())
    return Mmc4Rejection{Mmc4Reason::kNoValidImages,
                         "image_info: no image of at least 11,000 decoded bytes among " +
                             std::to_string(doc.images.size()) + " entries"};

  const auto rejected = options.assignment == Mmc4Assignment::kBestSentence
                            ? assignBestSentence(doc, options, plan)
                            : assignOneToOne(doc, options, plan);
  if (rejected) return *rejected;
  // The first maxNumImages by image index; in both the cut comes after the
  // decoding list is fixed (2.0.1 decodes, then cuts).
  const auto cap = static_cast<size_t>(std::max<int64_t>(options.maxNumImages, 1));
  if (plan.keptImages.size() > cap) {
    plan.keptImages.resize(cap);
    plan.keptSentences.resize(cap);
  }
  plan.text = assembleMmc4Text(doc.sentences, plan.keptSentences, options.eosText);
  return plan;
}

}  // namespace fs::data
