// XXH64 against xxhsum (Debian's xxhash package, the reference implementation)
// on lengths that exercise every tail path and the 32-byte stripes.
#include "backend/tensorfile/content_hash.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

namespace fs::tensorfile {
namespace {

std::string xxhsum(const std::filesystem::path& file) {
  const std::string cmd = "xxhsum -H1 '" + file.string() + "'";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (!pipe) return "";
  char buf[256] = {};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, pipe);
  ::pclose(pipe);
  return std::string(buf, n).substr(0, 16);
}

TEST(ContentHash, KnownValues) {
  EXPECT_EQ(contentHashText(xxh64({})), "xxh64:ef46db3751d8e999");
  const std::string abc = "abc";
  EXPECT_EQ(contentHashText(xxh64(std::as_bytes(std::span(abc.data(), abc.size())))),
            "xxh64:44bc2cf5ad770999");
}

TEST(ContentHash, MatchesXxhsumOnEveryTailLength) {
  const auto dir = std::filesystem::temp_directory_path() / ("fs_content_hash_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::mt19937 rng(7);
  for (size_t len : {1, 3, 4, 5, 7, 8, 9, 12, 15, 31, 32, 33, 36, 63, 64, 100, 1000, 65537}) {
    std::vector<std::byte> bytes(len);
    for (auto& b : bytes) b = static_cast<std::byte>(rng() & 0xff);
    const auto file = dir / ("bytes_" + std::to_string(len));
    std::ofstream(file, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(len));
    EXPECT_EQ(contentHashText(xxh64(bytes)), "xxh64:" + xxhsum(file)) << "length " << len;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fs::tensorfile
