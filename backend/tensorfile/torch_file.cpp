#include "backend/tensorfile/torch_file.h"

#include <algorithm>
#include <array>

#include "backend/tensorfile/byte_io.h"

namespace fs::tensorfile {
namespace {

constexpr std::array<std::uint8_t, 14> kLegacyMagic = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c,
                                                       0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

bool isLegacyTorchSave(std::span<const std::byte> bytes) {
  if (bytes.size() < kLegacyMagic.size()) return false;
  for (std::size_t i = 0; i < kLegacyMagic.size(); ++i) {
    if (std::to_integer<std::uint8_t>(bytes[i]) != kLegacyMagic[i]) return false;
  }
  return true;
}

StatusOr<TorchFile> TorchFile::open(const std::string& path, const TorchFileOptions& options) {
  auto mapped = MappedFile::open(path);
  if (!mapped) return mapped.status();
  return fromMapped(std::move(mapped.value()), options);
}

StatusOr<TorchFile> TorchFile::fromMapped(MappedFile file, const TorchFileOptions& options) {
  TorchFile tf;
  tf.file_ = std::move(file);
  if (Status st = tf.load(options); !st) return st;
  return tf;
}

Status TorchFile::load(const TorchFileOptions& options) {
  const auto bytes = file_.bytes();
  const std::string& path = file_.path();
  if (isLegacyTorchSave(bytes)) {
    return Status::unsupported(path +
                               ": legacy torch.save format (PyTorch < 1.6) is not supported; re-save with "
                               "torch.save(..., _use_new_zipfile_serialization=True)");
  }
  if (bytes.size() < 4 || std::to_integer<char>(bytes[0]) != 'P' || std::to_integer<char>(bytes[1]) != 'K') {
    return Status::invalidArgument(path +
                                   ": not a torch.save file (expected a zip archive starting with 'PK')");
  }
  auto zip = ZipReader::open(bytes, path);
  if (!zip) return zip.status();
  zip_ = std::move(zip.value());
  auto folder = torchArchiveFolder(zip_);
  if (!folder) return folder.status();
  folder_ = std::move(folder.value());

  if (const ZipEntry* order = zip_.find(folder_ + "/byteorder")) {
    auto data = zip_.data(*order);
    if (!data) return data.status();
    if (const std::string value = trim(detail::asString(data.value())); value != "little") {
      return Status::unsupported(path + ": byte order '" + value +
                                 "'; only little-endian files are supported");
    }
  }
  if (const ZipEntry* version = zip_.find(folder_ + "/version")) {
    auto data = zip_.data(*version);
    if (data && data->size() < 16) formatVersion_ = std::atoi(trim(detail::asString(data.value())).c_str());
  }

  const ZipEntry* pkl = zip_.find(folder_ + "/data.pkl");
  auto pickle = zip_.data(*pkl);
  if (!pickle) return pickle.status();
  if (options.verifyPickleCrc) {
    if (Status st = zip_.verifyCrc(*pkl); !st) return st;
  }
  PickleOptions popts;
  popts.sourceName = path + ":" + pkl->name;
  popts.resolveStorage = [this](const std::string& key) -> StatusOr<StorageRecord> {
    const std::string name = folder_ + "/data/" + key;
    const ZipEntry* entry = zip_.find(name);
    if (!entry) return Status::corruption(file_.path() + ": storage record '" + name + "' is missing");
    StorageRecord record;
    record.entry = name;
    record.fileOffset = entry->dataOffset;
    record.byteSize = entry->size;
    record.readable = entry->method == 0 && !(entry->flags & 1);
    return record;
  };
  auto root = unpickle(pickle.value(), popts);
  if (!root) return root.status();
  root_ = std::move(root.value());
  file_.dropResidentPages();  // NOTE [Index pages let go]
  return Status::ok();
}

StatusOr<std::span<const std::byte>> TorchFile::tensorBytes(const TensorRef& t) const {
  const std::string what = path() + ": tensor in '" + t.storageEntry + "'";
  if (t.isMeta) return Status::unsupported(what + " is a meta tensor: it has a shape but no data");
  auto extent = extentElements(t.shape, t.strides);
  if (!extent) return Status::invalidArgument(what + ": " + extent.status().message());
  const ZipEntry* entry = zip_.find(t.storageEntry);
  if (!entry || entry->dataOffset != t.storageFileOffset) {
    return Status::invalidArgument(what + ": no such storage record in this file");
  }
  if (!t.storageReadable || entry->method != 0) {
    auto data = zip_.data(*entry);
    return data.status().isOk() ? Status::unsupported(what + " cannot be read") : data.status();
  }
  if (extent.value() == 0) return std::span<const std::byte>();
  const std::uint64_t item = itemSize(t.dtype);
  const auto storageBytes = detail::mulU64(
      static_cast<std::uint64_t>(std::max<std::int64_t>(t.storageNumel, 0)), itemSize(t.storageDtype));
  const auto begin =
      detail::mulU64(static_cast<std::uint64_t>(std::max<std::int64_t>(t.storageOffset, 0)), item);
  const auto endElems =
      detail::addU64(static_cast<std::uint64_t>(std::max<std::int64_t>(t.storageOffset, 0)), extent.value());
  const auto end = endElems ? detail::mulU64(*endElems, item) : std::nullopt;
  const std::uint64_t limit = std::min<std::uint64_t>(storageBytes.value_or(0), entry->size);
  if (t.storageOffset < 0 || !begin || !end || *end > limit) {
    return Status::corruption(what + " (offset " + std::to_string(t.storageOffset) + ", " +
                              std::to_string(extent.value()) + " elements of " + std::to_string(item) +
                              " bytes) runs past its storage of " + std::to_string(limit) + " bytes");
  }
  return file_.bytes().subspan(entry->dataOffset + *begin, *end - *begin);
}

StatusOr<TensorView> TorchFile::view(const TensorRef& t) const {
  auto bytes = tensorBytes(t);
  if (!bytes) return bytes.status();
  TensorView v;
  v.dtype = t.dtype;
  v.shape = t.shape;
  v.strides = t.strides;
  v.bytes = bytes.value();
  return v;
}

StatusOr<std::vector<std::byte>> TorchFile::contiguousBytes(const TensorRef& t) const {
  auto v = view(t);
  if (!v) return v.status();
  return toContiguous(v.value());
}

}  // namespace fs::tensorfile
