#include "backend/tensorfile/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "backend/protocol/wire/run_dir.h"
#include "backend/tensorfile/byte_io.h"

namespace fs::tensorfile {
namespace {

using Json = nlohmann::ordered_json;
constexpr std::uint64_t kMaxHeaderBytes = 100ull << 20;  // the reference reader's limit

StatusOr<std::uint64_t> nonNegative(const Json& v, const std::string& what) {
  if (!v.is_number_unsigned()) return Status::corruption(what + " must be a non-negative integer");
  return v.get<std::uint64_t>();
}

StatusOr<SafetensorsEntry> parseEntry(const std::string& name, const Json& v, const std::string& where) {
  const std::string what = where + ": tensor '" + name + "'";
  if (!v.is_object()) return Status::corruption(what + " is not an object");
  SafetensorsEntry e;
  e.name = name;
  const auto dtype = v.find("dtype");
  if (dtype == v.end() || !dtype->is_string()) return Status::corruption(what + " has no string \"dtype\"");
  const auto dt = dtypeFromSafetensorsName(dtype->get<std::string>());
  if (!dt)
    return Status::unsupported(what + " has dtype '" + dtype->get<std::string>() +
                               "', which is not supported");
  e.dtype = *dt;
  const auto shape = v.find("shape");
  if (shape == v.end() || !shape->is_array() || shape->size() > 64) {
    return Status::corruption(what + " has no \"shape\" array of at most 64 dimensions");
  }
  std::uint64_t bytes = itemSize(e.dtype);
  for (const auto& d : *shape) {
    auto n = nonNegative(d, what + " shape entry");
    if (!n) return n.status();
    auto product = detail::mulU64(bytes, n.value());
    if (!product || n.value() > (1ull << 62))
      return Status::corruption(what + " has a shape whose size overflows");
    bytes = *product;
    e.shape.push_back(static_cast<std::int64_t>(n.value()));
  }
  const auto offsets = v.find("data_offsets");
  if (offsets == v.end() || !offsets->is_array() || offsets->size() != 2) {
    return Status::corruption(what + " has no \"data_offsets\" [begin, end]");
  }
  auto begin = nonNegative((*offsets)[0], what + " data_offsets");
  auto end = nonNegative((*offsets)[1], what + " data_offsets");
  if (!begin) return begin.status();
  if (!end) return end.status();
  e.begin = begin.value();
  e.end = end.value();
  if (e.end < e.begin || e.end - e.begin != bytes) {
    return Status::corruption(what + ": data_offsets [" + std::to_string(e.begin) + ", " +
                              std::to_string(e.end) + "] do not span " + std::to_string(bytes) +
                              " bytes (dtype and shape)");
  }
  return e;
}

}  // namespace

StatusOr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  auto mapped = MappedFile::open(path);
  if (!mapped) return mapped.status();
  return fromMapped(std::move(mapped.value()));
}

StatusOr<SafetensorsFile> SafetensorsFile::fromMapped(MappedFile file) {
  SafetensorsFile f;
  f.file_ = std::move(file);
  if (Status st = f.parse(); !st) return st;
  return f;
}

Status SafetensorsFile::parse() {
  const auto bytes = file_.bytes();
  const std::string& where = file_.path();
  const auto n = detail::readLE<std::uint64_t>(bytes, 0);
  if (!n)
    return Status::corruption(where + ": " + std::to_string(bytes.size()) +
                              " bytes is too short for a safetensors header");
  if (*n > kMaxHeaderBytes)
    return Status::corruption(where + ": header length " + std::to_string(*n) + " exceeds 100 MiB");
  if (*n > bytes.size() - 8) {
    return Status::corruption(where + ": header length " + std::to_string(*n) +
                              " runs past the end of the file (" + std::to_string(bytes.size()) +
                              " bytes; truncated?)");
  }
  const auto header = bytes.subspan(8, *n);
  if (header.empty() || std::to_integer<char>(header[0]) != '{') {
    return Status::corruption(where + ": header does not start with '{'");
  }
  const auto* text = reinterpret_cast<const char*>(header.data());
  const Json json = Json::parse(text, text + header.size(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object())
    return Status::corruption(where + ": header is not a valid JSON object");
  dataStart_ = 8 + *n;
  const std::uint64_t dataSize = bytes.size() - dataStart_;
  for (const auto& [name, value] : json.items()) {
    if (name == "__metadata__") {
      if (!value.is_object()) return Status::corruption(where + ": __metadata__ is not an object");
      for (const auto& [k, v] : value.items()) {
        if (!v.is_string())
          return Status::corruption(where + ": __metadata__ value '" + k + "' is not a string");
        metadata_[k] = v.get<std::string>();
      }
      continue;
    }
    auto entry = parseEntry(name, value, where);
    if (!entry) return entry.status();
    index_[name] = tensors_.size();
    tensors_.push_back(std::move(entry.value()));
  }
  // Tensors must tile the data section: no overlap, no hole, nothing left over.
  std::vector<const SafetensorsEntry*> order;
  for (const auto& t : tensors_) order.push_back(&t);
  std::sort(order.begin(), order.end(),
            [](auto* a, auto* b) { return std::tie(a->begin, a->end) < std::tie(b->begin, b->end); });
  std::uint64_t at = 0;
  for (const auto* t : order) {
    if (t->begin < at)
      return Status::corruption(where + ": tensor '" + t->name + "' overlaps the previous tensor");
    if (t->begin > at) {
      return Status::corruption(where + ": " + std::to_string(t->begin - at) +
                                " unused bytes before tensor '" + t->name + "'");
    }
    at = t->end;
  }
  if (at != dataSize) {
    return Status::corruption(where + ": tensors cover " + std::to_string(at) +
                              " bytes but the data section holds " + std::to_string(dataSize) +
                              (at > dataSize ? " (truncated file?)" : ""));
  }
  return Status::ok();
}

const SafetensorsEntry* SafetensorsFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

std::span<const std::byte> SafetensorsFile::bytes(const SafetensorsEntry& e) const {
  return file_.bytes().subspan(dataStart_ + e.begin, e.end - e.begin);
}

TensorView SafetensorsFile::view(const SafetensorsEntry& e) const {
  TensorView v;
  v.dtype = e.dtype;
  v.shape = e.shape;
  v.strides = contiguousStrides(e.shape);
  v.bytes = bytes(e);
  return v;
}

Status writeSafetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                        const std::map<std::string, std::string>& metadata, protocol::WriteEnv* env) {
  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::unordered_set<std::string> names;
  std::uint64_t offset = 0;
  for (const auto& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__" || !names.insert(t.name).second) {
      return Status::invalidArgument(path + ": tensor name '" + t.name + "' is empty, reserved or repeated");
    }
    auto extent = extentElements(t.shape, contiguousStrides(t.shape));
    if (!extent)
      return Status::invalidArgument(path + ": tensor '" + t.name + "': " + extent.status().message());
    const std::uint64_t size = static_cast<std::uint64_t>(numelOf(t.shape)) * itemSize(t.dtype);
    if (size != t.data.size()) {
      return Status::invalidArgument(path + ": tensor '" + t.name + "' has " + std::to_string(t.data.size()) +
                                     " bytes of data; its dtype and shape need " + std::to_string(size));
    }
    header[t.name] = {{"dtype", std::string(safetensorsName(t.dtype))},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + size}}};
    offset += size;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  unsigned char len[8];
  for (int i = 0; i < 8; ++i)
    len[i] = static_cast<unsigned char>(static_cast<std::uint64_t>(text.size()) >> (8 * i));

  // Crash-safe as atomicWriteFile (protocol/wire/run_dir.h), streaming the tensors instead of one buffer.
  protocol::WriteEnv& writes = protocol::writeEnvOr(env);
  const std::filesystem::path target(path);
  const std::filesystem::path tmp =
      protocol::parentDir(target) / protocol::tempFileName(target.filename().string());
  auto file = writes.createFile(tmp, 0644);
  if (!file) return file.status();
  Status st = file.value()->append(std::string_view(reinterpret_cast<const char*>(len), 8));
  if (st) st = file.value()->append(text);
  for (const auto& t : tensors) {
    if (st)
      st =
          file.value()->append(std::string_view(reinterpret_cast<const char*>(t.data.data()), t.data.size()));
  }
  if (st) st = file.value()->sync();
  if (Status closed = file.value()->close(); st && !closed) st = closed;
  if (st) st = writes.rename(tmp, target);
  if (!st) {
    (void)writes.remove(tmp);
    return st;
  }
  return writes.syncDir(protocol::parentDir(target));
}

}  // namespace fs::tensorfile
