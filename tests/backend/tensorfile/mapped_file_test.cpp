#include "backend/tensorfile/mapped_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "tests/backend/tensorfile/tensorfile_test_util.h"

namespace fs::tensorfile {
namespace {

TEST(MappedFile, MapsAFileAndKeepsItsAddressAcrossMoves) {
  const std::string path = test::makeTempDir("map") + "/f.bin";
  test::writeBytes(path, test::toBytes("hello"));
  auto file = MappedFile::open(path);
  ASSERT_TRUE(file.isOk()) << file.status().toString();
  const std::byte* data = file->bytes().data();
  MappedFile moved = std::move(file.value());
  EXPECT_EQ(moved.bytes().data(), data);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(moved.bytes().data()), moved.size()), "hello");
  EXPECT_EQ(moved.path(), path);
}

TEST(MappedFile, EmptyFileIsAnEmptySpan) {
  const std::string path = test::makeTempDir("map") + "/empty";
  test::writeBytes(path, {});
  auto file = MappedFile::open(path);
  ASSERT_TRUE(file.isOk());
  EXPECT_TRUE(file->bytes().empty());
}

TEST(MappedFile, ErrorsNameThePathAndTheReason) {
  auto missing = MappedFile::open("/nonexistent/x.pt");
  ASSERT_FALSE(missing.isOk());
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  EXPECT_EQ(missing.status().message(), "/nonexistent/x.pt: cannot open: No such file or directory");
  auto dir = MappedFile::open("/tmp");
  ASSERT_FALSE(dir.isOk());
  EXPECT_EQ(dir.status().message(), "/tmp: not a regular file");
  const std::string fifo = test::makeTempDir("map") + "/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto pipe = MappedFile::open(fifo);  // must not block waiting for a writer
  ASSERT_FALSE(pipe.isOk());
  EXPECT_EQ(pipe.status().message(), fifo + ": not a regular file");
}

TEST(MappedFile, FromBytes) {
  auto file = MappedFile::fromBytes("remote:ckpt.pt", test::toBytes("abc"));
  const std::byte* data = file.bytes().data();
  MappedFile moved = std::move(file);
  EXPECT_EQ(moved.bytes().data(), data);
  EXPECT_EQ(moved.size(), 3u);
  EXPECT_EQ(moved.path(), "remote:ckpt.pt");
  EXPECT_EQ(file.size(), 0u);  // NOLINT: moved-from is empty
}

}  // namespace
}  // namespace fs::tensorfile
