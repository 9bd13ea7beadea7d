// Test helper: writes zip archives byte by byte, with the knobs the reader
// must handle (ZIP64 records forced on small archives, compressed and
// encrypted flags, torch's 64-byte data alignment padding).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/tensorfile/zip_reader.h"

namespace fs::tensorfile::test {

struct ZipEntryOptions {
  bool zip64 = false;        // ZIP64 extras for every size/offset + ZIP64 end records
  std::uint16_t method = 0;  // written as is; data is never actually compressed
  std::uint16_t flags = 0;
  std::size_t align = 0;  // pad local headers so data starts at a multiple (torch: 64)
};

class ZipBuilder {
 public:
  using Options = ZipEntryOptions;

  void add(const std::string& name, const std::string& data, const Options& o = {}) {
    entries_.push_back({name, data, o});
  }

  std::string build(bool zip64End = false, const std::string& comment = "") const {
    std::string out;
    std::vector<std::uint64_t> offsets;
    for (const auto& e : entries_) {
      offsets.push_back(out.size());
      const auto crc = crc32(std::as_bytes(std::span(e.data.data(), e.data.size())));
      std::string extra;
      if (e.o.zip64) {
        put16(extra, 1);
        put16(extra, 16);
        put64(extra, e.data.size());
        put64(extra, e.data.size());
      }
      if (e.o.align) {
        const std::size_t dataAt = out.size() + 30 + e.name.size() + extra.size() + 4;
        const std::size_t pad = (e.o.align - dataAt % e.o.align) % e.o.align;
        put16(extra, 0x4246);  // "FB", as torch's writer
        put16(extra, static_cast<std::uint16_t>(pad));
        extra.append(pad, 'Z');
      }
      put32(out, 0x04034b50);
      put16(out, e.o.zip64 ? 45 : 20);
      put16(out, e.o.flags);
      put16(out, e.o.method);
      put32(out, 0);
      put32(out, crc);
      put32(out, e.o.zip64 ? 0xFFFFFFFFu : static_cast<std::uint32_t>(e.data.size()));
      put32(out, e.o.zip64 ? 0xFFFFFFFFu : static_cast<std::uint32_t>(e.data.size()));
      put16(out, static_cast<std::uint16_t>(e.name.size()));
      put16(out, static_cast<std::uint16_t>(extra.size()));
      out += e.name + extra + e.data;
    }
    const std::uint64_t cdStart = out.size();
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      const auto& e = entries_[i];
      const auto crc = crc32(std::as_bytes(std::span(e.data.data(), e.data.size())));
      std::string extra;
      if (e.o.zip64) {
        put16(extra, 1);
        put16(extra, 24);
        put64(extra, e.data.size());
        put64(extra, e.data.size());
        put64(extra, offsets[i]);
      }
      put32(out, 0x02014b50);
      put16(out, 45);
      put16(out, e.o.zip64 ? 45 : 20);
      put16(out, e.o.flags);
      put16(out, e.o.method);
      put32(out, 0);
      put32(out, crc);
      put32(out, e.o.zip64 ? 0xFFFFFFFFu : static_cast<std::uint32_t>(e.data.size()));
      put32(out, e.o.zip64 ? 0xFFFFFFFFu : static_cast<std::uint32_t>(e.data.size()));
      put16(out, static_cast<std::uint16_t>(e.name.size()));
      put16(out, static_cast<std::uint16_t>(extra.size()));
      put16(out, 0);
      put16(out, 0);
      put16(out, 0);
      put32(out, 0);
      put32(out, e.o.zip64 ? 0xFFFFFFFFu : static_cast<std::uint32_t>(offsets[i]));
      out += e.name + extra;
    }
    const std::uint64_t cdSize = out.size() - cdStart;
    if (zip64End) {
      const std::uint64_t at = out.size();
      put32(out, 0x06064b50);
      put64(out, 44);
      put16(out, 45);
      put16(out, 45);
      put32(out, 0);
      put32(out, 0);
      put64(out, entries_.size());
      put64(out, entries_.size());
      put64(out, cdSize);
      put64(out, cdStart);
      put32(out, 0x07064b50);
      put32(out, 0);
      put64(out, at);
      put32(out, 1);
    }
    put32(out, 0x06054b50);
    put16(out, 0);
    put16(out, 0);
    put16(out, zip64End ? 0xFFFF : static_cast<std::uint16_t>(entries_.size()));
    put16(out, zip64End ? 0xFFFF : static_cast<std::uint16_t>(entries_.size()));
    put32(out, zip64End ? 0xFFFFFFFFu : static_cast<std::uint32_t>(cdSize));
    put32(out, zip64End ? 0xFFFFFFFFu : static_cast<std::uint32_t>(cdStart));
    put16(out, static_cast<std::uint16_t>(comment.size()));
    return out + comment;
  }

 private:
  struct Entry {
    std::string name, data;
    Options o;
  };
  static void put16(std::string& s, std::uint64_t v) { putN(s, v, 2); }
  static void put32(std::string& s, std::uint64_t v) { putN(s, v, 4); }
  static void put64(std::string& s, std::uint64_t v) { putN(s, v, 8); }
  static void putN(std::string& s, std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) s += static_cast<char>((v >> (8 * i)) & 0xFF);
  }
  std::vector<Entry> entries_;
};

}  // namespace fs::tensorfile::test
