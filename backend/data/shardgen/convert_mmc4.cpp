#include "backend/data/shardgen/convert_mmc4.h"

#include <archive.h>
#include <archive_entry.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "backend/data/image/image_codec.h"
#include "backend/data/shardgen/base64_encode.h"
#include "backend/data/shards/tar_writer.h"
#include "backend/protocol/config/shard_pattern.h"

namespace fs::data {

using protocol::Status;
using protocol::StatusOr;

namespace {

constexpr size_t kMaxProblems = 20;

// The JSON-lines text of a document file: a zip's first member, or the file.
StatusOr<std::string> readDocumentFile(const std::string& path) {
  if (path.size() < 4 || path.substr(path.size() - 4) != ".zip") {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status::notFound(path + ": cannot open");
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  archive* a = archive_read_new();
  archive_read_support_format_zip(a);
  std::string text;
  Status status = Status::ok();
  if (archive_read_open_filename(a, path.c_str(), 1 << 16) != ARCHIVE_OK) {
    status = Status::ioError(path + ": not a readable zip: " + archive_error_string(a));
  } else {
    archive_entry* entry = nullptr;
    if (archive_read_next_header(a, &entry) != ARCHIVE_OK) {
      status = Status::corruption(path + ": the zip has no first member");
    } else {
      char buf[1 << 16];
      la_ssize_t n;
      while ((n = archive_read_data(a, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
      if (n < 0) status = Status::corruption(path + ": " + archive_error_string(a));
    }
  }
  archive_read_free(a);
  if (!status) return status;
  return text;
}

bool safeImageName(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && name.find('\\') == std::string::npos &&
         name != "." && name != ".." && name.find('\0') == std::string::npos;
}

class Converter {
 public:
  Converter(const ConvertMmc4Options& o, const std::function<void(const std::string&)>& progress)
      : o_(o), progress_(progress) {}

  Status run() {
    auto files = protocol::expandShards(o_.documents);
    if (!files) return Status::invalidArgument("--documents: " + files.status().message());
    if (!o_.dryRun) {
      std::error_code ec;
      std::filesystem::create_directories(o_.outDir, ec);
      if (ec) return Status::ioError(o_.outDir + ": cannot create: " + ec.message());
    }
    for (size_t f = 0; f < files->size(); ++f) {
      const std::string& path = (*files)[f];
      auto text = readDocumentFile(path);
      if (!text) return text.status();
      ++sum.files;
      std::istringstream lines(text.value());
      std::string line;
      for (int64_t lineNo = 1; std::getline(lines, line); ++lineNo) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        if (Status s = convertLine(path, f, lineNo, line); !s) return s;
        if (o_.onProgress)
          o_.onProgress(static_cast<int64_t>(f), static_cast<int64_t>(files->size()), sum.documents);
      }
      if (o_.onProgress)
        o_.onProgress(static_cast<int64_t>(f + 1), static_cast<int64_t>(files->size()), sum.documents);
      if (progress_) {
        progress_(path + ": " + std::to_string(sum.documents) + " documents, " +
                  std::to_string(sum.imagesFound) + " images found, " + std::to_string(sum.imagesMissing) +
                  " missing");
      }
      if (o_.docsPerShard <= 0 &&
          (f + 1) % static_cast<size_t>(std::max<int64_t>(1, o_.filesPerShard)) == 0) {
        if (Status s = closeShard(); !s) return s;
      }
    }
    return closeShard();
  }

  ConvertMmc4Summary sum;

 private:
  void problem(const std::string& text) {
    if (sum.problems.size() < kMaxProblems) sum.problems.push_back(text);
  }

  std::optional<std::filesystem::path> findImage(size_t fileIndex, const std::string& name) const {
    const std::filesystem::path dir(o_.imagesDir);
    for (const auto& p : {dir / std::to_string(fileIndex) / name, dir / name}) {
      std::error_code ec;
      if (std::filesystem::is_regular_file(p, ec)) return p;
    }
    return std::nullopt;
  }

  Status convertLine(const std::string& path, size_t fileIndex, int64_t lineNo, const std::string& line) {
    const std::string where = path + ":" + std::to_string(lineNo);
    nlohmann::json doc = nlohmann::json::parse(line, nullptr, false);
    if (doc.is_discarded() || !doc.is_object() || !doc.contains("image_info") ||
        !doc["image_info"].is_array()) {
      ++sum.badLines;
      problem(where + ": not a JSON document with an image_info list");
      return Status::ok();
    }
    for (auto& info : doc["image_info"]) {
      const std::string name =
          info.is_object() && info.contains("image_name") && info["image_name"].is_string()
              ? info["image_name"].get<std::string>()
              : std::string();
      if (!safeImageName(name)) {
        ++sum.imagesUnsafeName;
        problem(where + ": image_name '" + name + "' is not a plain file name");
        continue;
      }
      const auto file = findImage(fileIndex, name);
      if (!file) {
        ++sum.imagesMissing;
        continue;
      }
      std::ifstream in(*file, std::ios::binary);
      std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      auto image = decodeImage(bytes);
      auto jpeg =
          image ? encodeJpeg(image.value(), o_.jpegQuality) : StatusOr<std::vector<uint8_t>>(image.status());
      if (!jpeg) {
        ++sum.imagesUnreadable;
        problem(file->string() + ": " + jpeg.status().message());
        continue;
      }
      ++sum.imagesFound;
      if (!o_.dryRun) info["image_base64"] = encodeBase64(jpeg.value());
    }
    ++sum.documents;
    if (o_.dryRun) return Status::ok();
    if (!writer_) {
      char name[32];
      std::snprintf(name, sizeof name, "%09lld.tar", static_cast<long long>(sum.shardsWritten));
      auto w = TarWriter::create((std::filesystem::path(o_.outDir) / name).string());
      if (!w) return w.status();
      writer_.emplace(std::move(w.value()));
    }
    char key[48];
    std::snprintf(key, sizeof key, "%06zu_%09lld", fileIndex, static_cast<long long>(lineNo));
    if (Status s = writer_->add(std::string(key) + ".json", doc.dump()); !s) return s;
    if (o_.docsPerShard > 0 && ++docsInShard_ >= o_.docsPerShard) return closeShard();
    return Status::ok();
  }

  Status closeShard() {
    docsInShard_ = 0;
    if (!writer_) return Status::ok();
    if (Status s = writer_->finish(); !s) return s;
    std::error_code ec;
    sum.bytesWritten += static_cast<int64_t>(std::filesystem::file_size(writer_->path(), ec));
    ++sum.shardsWritten;
    writer_.reset();
    return Status::ok();
  }

  const ConvertMmc4Options& o_;
  const std::function<void(const std::string&)>& progress_;
  std::optional<TarWriter> writer_;
  int64_t docsInShard_ = 0;
};

}  // namespace

StatusOr<ConvertMmc4Summary> convertMmc4(const ConvertMmc4Options& options,
                                         const std::function<void(const std::string&)>& progress) {
  if (options.documents.empty()) return Status::invalidArgument("--documents: no document files given");
  if (options.imagesDir.empty()) return Status::invalidArgument("--images: no image directory given");
  if (!options.dryRun && options.outDir.empty())
    return Status::invalidArgument("--out: no output directory given");
  Converter c(options, progress);
  if (Status s = c.run(); !s) return s;
  return c.sum;
}

}  // namespace fs::data
