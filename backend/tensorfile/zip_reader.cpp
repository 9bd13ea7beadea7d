#include "backend/tensorfile/zip_reader.h"

#include <algorithm>
#include <array>

#include "backend/tensorfile/byte_io.h"
#include "backend/tensorfile/mapped_file.h"

namespace fs::tensorfile {
namespace {

using detail::inBounds;
using detail::readLE;

constexpr std::uint32_t kLocalHeaderSig = 0x04034b50;
constexpr std::uint32_t kCentralHeaderSig = 0x02014b50;
constexpr std::uint32_t kEocdSig = 0x06054b50;
constexpr std::uint32_t kZip64EocdSig = 0x06064b50;
constexpr std::uint32_t kZip64LocatorSig = 0x07064b50;
constexpr std::size_t kEocdSize = 22;
constexpr std::size_t kZip64LocatorSize = 20;
constexpr std::size_t kZip64EocdSize = 56;
constexpr std::size_t kCentralHeaderSize = 46;
constexpr std::size_t kLocalHeaderSize = 30;
constexpr std::uint32_t kMax32 = 0xFFFFFFFFu;

// NOTE [Zip directory limits]
// The end records declare the central directory's entry count and size, and each
// entry its name length; before these limits they were bounded only by the file's
// size, which for a mapped file (or a sparse mirror of a remote one: full size,
// mostly holes) can be many GiB, so a small crafted file could make the reader
// reserve, fetch and allocate that much. The limits are far above any checkpoint:
//  - kZipMaxEntries (1 Mi): torch.save writes one entry per storage plus a few
//    records, a few thousand for the largest models; Python's zipfile passes 65535
//    only with ZIP64 (tests read 70001). 1 Mi entries is ~150 bytes each in memory.
//  - kZipMaxDirectoryBytes (128 MiB): the directory is 46 bytes per entry plus its
//    name, extra field and comment: ~128 bytes an entry at the entry limit.
//  - kZipMaxNameBytes (4096, PATH_MAX): torch.save names are "<folder>/data/<key>",
//    tens of bytes; a longer name is no file a checkpoint writer made.
// They are checked on the declared values, before any bounds check, allocation or
// fetch, so the error names the field even when the file is short.

struct Directory {
  std::uint64_t entries = 0;
  std::uint64_t size = 0;
  std::uint64_t offset = 0;
};

// Short names for the many readLE calls; all return nullopt past the end.
auto u16(std::span<const std::byte> b, std::uint64_t at) {
  return readLE<std::uint16_t>(b, at);
}
auto u32(std::span<const std::byte> b, std::uint64_t at) {
  return readLE<std::uint32_t>(b, at);
}
auto u64(std::span<const std::byte> b, std::uint64_t at) {
  return readLE<std::uint64_t>(b, at);
}

class Parser {
 public:
  Parser(std::span<const std::byte> bytes, const std::string& source) : b_(bytes), source_(source) {}

  Status corrupt(const std::string& what) const {
    return Status::corruption(source_ + ": not a valid zip archive: " + what);
  }

  StatusOr<Directory> findDirectory() const {
    if (b_.size() < kEocdSize) return corrupt("file of " + std::to_string(b_.size()) + " bytes is too short");
    // The end record sits in the last 22 + 65535 (comment) bytes; scan backwards.
    const std::uint64_t lowest = b_.size() >= kEocdSize + 0xFFFF ? b_.size() - kEocdSize - 0xFFFF : 0;
    std::uint64_t pos = b_.size() - kEocdSize;
    for (;; --pos) {
      if (*u32(b_, pos) == kEocdSig && pos + kEocdSize + *u16(b_, pos + 20) <= b_.size()) break;
      if (pos == lowest) return corrupt("no end-of-central-directory record (truncated file?)");
    }
    Directory dir;
    dir.entries = *u16(b_, pos + 10);
    dir.size = *u32(b_, pos + 12);
    dir.offset = *u32(b_, pos + 16);
    if (pos >= kZip64LocatorSize && *u32(b_, pos - kZip64LocatorSize) == kZip64LocatorSig) {
      const std::uint64_t at = *u64(b_, pos - kZip64LocatorSize + 8);
      const auto sig = u32(b_, at);
      if (!sig || *sig != kZip64EocdSig || !inBounds(at, kZip64EocdSize, b_.size())) {
        return corrupt("ZIP64 end record offset " + std::to_string(at) +
                       " does not point at a ZIP64 end record");
      }
      dir.entries = *u64(b_, at + 32);
      dir.size = *u64(b_, at + 40);
      dir.offset = *u64(b_, at + 48);
    }
    if (dir.entries > kZipMaxEntries) {
      return corrupt("the end record declares " + std::to_string(dir.entries) +
                     " central directory entries, more than the " + std::to_string(kZipMaxEntries) +
                     " this reader accepts");
    }
    if (dir.size > kZipMaxDirectoryBytes) {
      return corrupt("the end record declares a central directory of " + std::to_string(dir.size) +
                     " bytes, more than the " + std::to_string(kZipMaxDirectoryBytes) +
                     " this reader accepts");
    }
    if (!inBounds(dir.offset, dir.size, b_.size())) {
      return corrupt("central directory [" + std::to_string(dir.offset) + ", +" + std::to_string(dir.size) +
                     ") lies outside the file of " + std::to_string(b_.size()) + " bytes");
    }
    if (dir.entries > dir.size / kCentralHeaderSize) {
      return corrupt(std::to_string(dir.entries) + " entries cannot fit in a central directory of " +
                     std::to_string(dir.size) + " bytes");
    }
    return dir;
  }

  // Reads the central header at `at` into `entry`; returns the next header's offset.
  StatusOr<std::uint64_t> readCentral(std::uint64_t at, std::uint64_t end, std::uint64_t index,
                                      ZipEntry& entry) const {
    const std::string where = "central directory entry " + std::to_string(index);
    if (!inBounds(at, kCentralHeaderSize, end) || *u32(b_, at) != kCentralHeaderSig) {
      return corrupt(where + ": bad signature at offset " + std::to_string(at));
    }
    entry.flags = *u16(b_, at + 8);
    entry.method = *u16(b_, at + 10);
    entry.crc32 = *u32(b_, at + 16);
    entry.compressedSize = *u32(b_, at + 20);
    entry.size = *u32(b_, at + 24);
    const std::uint16_t nameLen = *u16(b_, at + 28);
    const std::uint16_t extraLen = *u16(b_, at + 30);
    const std::uint16_t commentLen = *u16(b_, at + 32);
    entry.localHeaderOffset = *u32(b_, at + 42);
    if (nameLen > kZipMaxNameBytes) {
      return corrupt(where + ": name length " + std::to_string(nameLen) + " is more than the " +
                     std::to_string(kZipMaxNameBytes) + " bytes this reader accepts");
    }
    const std::uint64_t next = at + kCentralHeaderSize + nameLen + extraLen + commentLen;
    if (next > end) return corrupt(where + ": name/extra/comment run past the central directory");
    entry.name = detail::asString(b_.subspan(at + kCentralHeaderSize, nameLen));
    Status st = applyZip64Extra(b_.subspan(at + kCentralHeaderSize + nameLen, extraLen), entry);
    if (!st) return st;
    return next;
  }

  // The ZIP64 extended information field replaces the 32-bit fields that hold 0xFFFFFFFF, in order.
  Status applyZip64Extra(std::span<const std::byte> extra, ZipEntry& entry) const {
    std::uint64_t pos = 0;
    while (pos + 4 <= extra.size()) {
      const std::uint16_t id = *u16(extra, pos);
      const std::uint16_t len = *u16(extra, pos + 2);
      if (pos + 4 + len > extra.size())
        return corrupt("entry '" + entry.name + "': extra field runs past its end");
      if (id == 0x0001) {
        auto field = extra.subspan(pos + 4, len);
        std::uint64_t at = 0;
        for (std::uint64_t* value : {&entry.size, &entry.compressedSize, &entry.localHeaderOffset}) {
          if (*value != kMax32) continue;
          const auto v = u64(field, at);
          if (!v) return corrupt("entry '" + entry.name + "': ZIP64 extra field too short");
          *value = *v;
          at += 8;
        }
      }
      pos += 4 + len;
    }
    return Status::ok();
  }

  Status locateData(ZipEntry& entry) const {
    const std::uint64_t at = entry.localHeaderOffset;
    if (!inBounds(at, kLocalHeaderSize, b_.size()) || *u32(b_, at) != kLocalHeaderSig) {
      return corrupt("entry '" + entry.name + "': no local header at offset " + std::to_string(at));
    }
    entry.dataOffset = at + kLocalHeaderSize + *u16(b_, at + 26) + *u16(b_, at + 28);
    if (!inBounds(entry.dataOffset, entry.compressedSize, b_.size())) {
      return corrupt("entry '" + entry.name + "': data [" + std::to_string(entry.dataOffset) + ", +" +
                     std::to_string(entry.compressedSize) + ") runs past the end of the file (" +
                     std::to_string(b_.size()) + " bytes; truncated?)");
    }
    if (entry.method == 0 && entry.compressedSize != entry.size) {
      return corrupt("entry '" + entry.name + "' is stored but its sizes differ (" +
                     std::to_string(entry.compressedSize) + " vs " + std::to_string(entry.size) + ")");
    }
    return Status::ok();
  }

 private:
  std::span<const std::byte> b_;
  const std::string& source_;
};

const std::array<std::uint32_t, 256>& crcTable() {
  static const auto table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return table;
}

}  // namespace

StatusOr<ZipDirectoryExtent> findZipDirectory(std::span<const std::byte> bytes,
                                              const std::string& sourceName) {
  auto dir = Parser(bytes, sourceName).findDirectory();
  if (!dir) return dir.status();
  return ZipDirectoryExtent{dir->offset, dir->size, dir->entries};
}

StatusOr<std::vector<ZipEntry>> readZipDirectory(std::span<const std::byte> bytes,
                                                 const std::string& sourceName) {
  Parser parser(bytes, sourceName);
  auto dir = parser.findDirectory();
  if (!dir) return dir.status();
  const std::uint64_t end = dir->offset + dir->size;
  std::vector<ZipEntry> entries;
  entries.reserve(dir->entries);
  std::uint64_t at = dir->offset;
  for (std::uint64_t i = 0; i < dir->entries; ++i) {
    ZipEntry entry;
    auto next = parser.readCentral(at, end, i, entry);
    if (!next) return next.status();
    at = next.value();
    entries.push_back(std::move(entry));
  }
  return entries;
}

std::uint64_t zipLocalHeaderSize(std::span<const std::byte> header) {
  const auto nameLen = u16(header, 26);
  const auto extraLen = u16(header, 28);
  if (header.size() < kLocalHeaderSize || !nameLen || !extraLen) return kLocalHeaderSize;
  return kLocalHeaderSize + *nameLen + *extraLen;
}

StatusOr<ZipReader> ZipReader::open(std::span<const std::byte> bytes, std::string sourceName) {
  ZipReader zip;
  zip.bytes_ = bytes;
  zip.source_ = std::move(sourceName);
  auto entries = readZipDirectory(bytes, zip.source_);
  if (!entries) return entries.status();
  zip.entries_ = std::move(entries.value());
  Parser parser(bytes, zip.source_);
  for (std::size_t i = 0; i < zip.entries_.size(); ++i) {
    if (!zip.index_.emplace(zip.entries_[i].name, i).second) {
      return parser.corrupt("entry name '" + zip.entries_[i].name + "' appears twice");
    }
  }
  // NOTE [Local headers read ahead]: each entry's local header sits just before its data,
  // scattered over the file; asking for all of them at once lets a cold disk read them in
  // parallel instead of one page fault after another (docs/benchmarks.md, "Opening a checkpoint").
  for (const ZipEntry& entry : zip.entries_) {
    if (inBounds(entry.localHeaderOffset, kLocalHeaderSize, bytes.size())) {
      adviseWillNeed(bytes.subspan(entry.localHeaderOffset, kLocalHeaderSize));
    }
  }
  for (ZipEntry& entry : zip.entries_) {
    if (Status st = parser.locateData(entry); !st) return st;
  }
  return zip;
}

const ZipEntry* ZipReader::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &entries_[it->second];
}

StatusOr<std::span<const std::byte>> ZipReader::data(const ZipEntry& entry) const {
  if (entry.flags & 1) return Status::unsupported(source_ + ": entry '" + entry.name + "' is encrypted");
  if (entry.method != 0) {
    return Status::unsupported(
        source_ + ": entry '" + entry.name + "' is compressed (method " + std::to_string(entry.method) +
        (entry.method == 8 ? ", deflate" : "") +
        "); only stored entries are read (torch.save never compresses; re-zip with 'zip -0')");
  }
  if (!inBounds(entry.dataOffset, entry.size, bytes_.size())) {
    return Status::corruption(source_ + ": entry '" + entry.name + "' lies outside the file");
  }
  return bytes_.subspan(entry.dataOffset, entry.size);
}

Status ZipReader::verifyCrc(const ZipEntry& entry) const {
  auto d = data(entry);
  if (!d) return d.status();
  const std::uint32_t actual = crc32(d.value());
  if (actual != entry.crc32) {
    return Status::corruption(source_ + ": entry '" + entry.name + "' fails its CRC-32 check (corrupt file)");
  }
  return Status::ok();
}

std::uint32_t crc32(std::span<const std::byte> bytes, std::uint32_t previous) {
  const auto& table = crcTable();
  std::uint32_t c = ~previous;
  for (std::byte b : bytes) c = table[(c ^ std::to_integer<std::uint32_t>(b)) & 0xFF] ^ (c >> 8);
  return ~c;
}

StatusOr<std::string> torchArchiveFolder(const ZipReader& zip) {
  std::vector<std::string> found;
  for (const auto& e : zip.entries()) {
    const auto slash = e.name.find('/');
    if (slash != std::string::npos && slash > 0 &&
        e.name.compare(slash, std::string::npos, "/data.pkl") == 0) {
      found.push_back(e.name.substr(0, slash));
    }
  }
  if (found.empty()) {
    return Status::notFound(zip.sourceName() + ": no '<folder>/data.pkl' entry; not a torch.save archive");
  }
  if (found.size() > 1) {
    return Status::invalidArgument(zip.sourceName() + ": several data.pkl entries ('" + found[0] +
                                   "/data.pkl', '" + found[1] +
                                   "/data.pkl'); expected one torch.save archive folder");
  }
  return found.front();
}

}  // namespace fs::tensorfile
