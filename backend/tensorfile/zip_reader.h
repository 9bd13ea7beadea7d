// Reader of the zip container torch.save writes (and any zip of stored entries),
// ZIP64 included (archives > 4 GiB, > 65535 entries).
//
// Zero-copy: an entry's data is a span into the caller's bytes (usually a
// MappedFile). Only stored (method 0) entries can be read; torch.save never
// compresses. Deflated or encrypted entries are listed and report Unsupported
// when read.
//
// Every offset and length read from the file is checked against the buffer:
// a truncated or corrupt archive yields a Corruption status naming the source,
// the entry and the field, never a crash. Work is linear in the central
// directory size.
//
// Ownership: ZipReader does not own the bytes. REQUIRES: the bytes passed to
// open() outlive the reader and every span it returns.
// Thread-safety: const methods may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::tensorfile {

using fs::protocol::Status;
using fs::protocol::StatusOr;

struct ZipEntry {
  std::string name;
  std::uint16_t method = 0;  // 0 stored, 8 deflate, ...
  std::uint16_t flags = 0;   // general purpose bit flags (bit 0: encrypted)
  std::uint32_t crc32 = 0;
  std::uint64_t compressedSize = 0;
  std::uint64_t size = 0;  // uncompressed
  std::uint64_t localHeaderOffset = 0;
  std::uint64_t dataOffset = 0;  // first data byte, from the start of the buffer
};

class ZipReader {
 public:
  // Parses the end-of-central-directory record(s), the central directory and
  // every local header. `sourceName` (usually the path) prefixes messages.
  static StatusOr<ZipReader> open(std::span<const std::byte> bytes, std::string sourceName);

  const std::vector<ZipEntry>& entries() const { return entries_; }
  // nullptr when there is no entry of that exact name.
  const ZipEntry* find(std::string_view name) const;
  // The stored bytes of `entry`. Unsupported for compressed or encrypted entries.
  // REQUIRES: entry is one of entries().
  StatusOr<std::span<const std::byte>> data(const ZipEntry& entry) const;
  // Reads the whole entry and compares its CRC-32 with the directory's.
  Status verifyCrc(const ZipEntry& entry) const;
  const std::string& sourceName() const { return source_; }

 private:
  std::span<const std::byte> bytes_;
  std::string source_;
  std::vector<ZipEntry> entries_;
  std::unordered_map<std::string, std::size_t> index_;
};

// The pieces of open(), for a reader that holds only parts of the file (a
// sparse copy fetched over the network, inspect/sparse_mirror.h):
// Where the central directory lies, from the end records (the file's last
// 22 + 65535 + 76 bytes at most).
// The most the central directory may declare (NOTE [Zip directory limits] in
// zip_reader.cpp); beyond them open() refuses the file, naming the field.
inline constexpr std::uint64_t kZipMaxEntries = 1u << 20;
inline constexpr std::uint64_t kZipMaxDirectoryBytes = 128u << 20;
inline constexpr std::uint64_t kZipMaxNameBytes = 4096;

struct ZipDirectoryExtent {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint64_t entries = 0;
};
StatusOr<ZipDirectoryExtent> findZipDirectory(std::span<const std::byte> bytes,
                                              const std::string& sourceName);
// The central directory's entries (dataOffset not yet known: 0). Reads the end
// records and the directory only.
StatusOr<std::vector<ZipEntry>> readZipDirectory(std::span<const std::byte> bytes,
                                                 const std::string& sourceName);
// The size of the local header that starts `header` (30 + name + extra), from
// its first 30 bytes; 30 when fewer are given.
std::uint64_t zipLocalHeaderSize(std::span<const std::byte> header);
inline constexpr std::uint64_t kZipLocalHeaderFixedSize = 30;

// CRC-32 (ISO-HDLC, as zip uses it); pass the previous result to continue.
std::uint32_t crc32(std::span<const std::byte> bytes, std::uint32_t previous = 0);

// The folder torch.save puts every record in: "archive" for "archive/data.pkl".
// It is the folder of the one entry named "<folder>/data.pkl". NotFound when no
// such entry exists; InvalidArgument when several do.
StatusOr<std::string> torchArchiveFolder(const ZipReader& zip);

}  // namespace fs::tensorfile
