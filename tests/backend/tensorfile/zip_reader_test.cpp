// The zip container: stored entries, ZIP64, torch's alignment padding,
// unsupported methods, and corrupt or truncated archives.
#include "backend/tensorfile/zip_reader.h"

#include <gtest/gtest.h>

#include "tests/backend/tensorfile/tensorfile_test_util.h"
#include "tests/backend/tensorfile/zip_builder.h"

namespace fs::tensorfile {
namespace {

using test::ZipBuilder;

std::span<const std::byte> bytesOf(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}
std::string text(std::span<const std::byte> b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

ZipBuilder sampleArchive(const ZipBuilder::Options& o = {}) {
  ZipBuilder z;
  z.add("archive/data.pkl", "pickle bytes", o);
  z.add("archive/data/0", std::string(100, 'x'), o);
  z.add("archive/data/1", "", o);
  z.add("archive/version", "3\n", o);
  return z;
}

void expectSample(const std::string& bytes) {
  auto zip = ZipReader::open(bytesOf(bytes), "t.zip");
  ASSERT_TRUE(zip.isOk()) << zip.status().toString();
  ASSERT_EQ(zip->entries().size(), 4u);
  EXPECT_EQ(zip->entries()[1].name, "archive/data/0");
  const ZipEntry* e = zip->find("archive/data/0");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->size, 100u);
  auto data = zip->data(*e);
  ASSERT_TRUE(data.isOk());
  EXPECT_EQ(text(data.value()), std::string(100, 'x'));
  EXPECT_EQ(data->data(), bytesOf(bytes).data() + e->dataOffset);  // zero-copy
  for (const auto& entry : zip->entries()) EXPECT_TRUE(zip->verifyCrc(entry).isOk()) << entry.name;
  EXPECT_EQ(torchArchiveFolder(zip.value()).value(), "archive");
}

TEST(ZipReader, Crc32OfTheCheckString) {
  EXPECT_EQ(crc32(bytesOf("123456789")), 0xCBF43926u);
}

TEST(ZipReader, StoredEntries) {
  expectSample(sampleArchive().build());
}

TEST(ZipReader, AlignedLikeTorchAndWithAComment) {
  const std::string bytes = sampleArchive({.align = 64}).build(false, "a comment");
  expectSample(bytes);
  auto zip = ZipReader::open(bytesOf(bytes), "t.zip");
  for (const auto& e : zip->entries()) EXPECT_EQ(e.dataOffset % 64, 0u) << e.name;
}

TEST(ZipReader, Zip64ExtrasAndEndRecords) {
  expectSample(sampleArchive({.zip64 = true}).build(true));
  expectSample(sampleArchive().build(true));
}

TEST(ZipReader, CompressedAndEncryptedEntriesAreListedButNotRead) {
  ZipBuilder z;
  z.add("a/deflated", "zz", {.method = 8});
  z.add("a/secret", "zz", {.flags = 1});
  const std::string bytes = z.build();
  auto zip = ZipReader::open(bytesOf(bytes), "t.zip");
  ASSERT_TRUE(zip.isOk()) << zip.status().toString();
  auto d = zip->data(zip->entries()[0]);
  EXPECT_EQ(d.status().code(), Status::Code::kUnsupported);
  EXPECT_EQ(d.status().message(),
            "t.zip: entry 'a/deflated' is compressed (method 8, deflate); only stored entries are read "
            "(torch.save never compresses; re-zip with 'zip -0')");
  EXPECT_EQ(zip->data(zip->entries()[1]).status().message(), "t.zip: entry 'a/secret' is encrypted");
}

TEST(ZipReader, ArchiveFolder) {
  ZipBuilder none;
  none.add("x/y/data.pkl", "");
  none.add("data.pkl", "");
  const std::string a = none.build();
  EXPECT_EQ(torchArchiveFolder(ZipReader::open(bytesOf(a), "n.zip").value()).status().code(),
            Status::Code::kNotFound);
  ZipBuilder two;
  two.add("a/data.pkl", "");
  two.add("b/data.pkl", "");
  const std::string b = two.build();
  EXPECT_EQ(torchArchiveFolder(ZipReader::open(bytesOf(b), "t.zip").value()).status().code(),
            Status::Code::kInvalidArgument);
}

TEST(ZipReader, EveryTruncationIsACorruptionError) {
  const std::string full = sampleArchive({.align = 64}).build();
  for (std::size_t n = 0; n < full.size(); ++n) {
    auto zip = ZipReader::open(bytesOf(full).first(n), "cut.zip");
    ASSERT_FALSE(zip.isOk()) << "accepted a zip cut at " << n;
    EXPECT_EQ(zip.status().code(), Status::Code::kCorruption);
    EXPECT_EQ(zip.status().message().rfind("cut.zip: not a valid zip archive: ", 0), 0u)
        << zip.status().message();
  }
}

TEST(ZipReader, CorruptDirectoryFieldsAreNamed) {
  std::string bytes = sampleArchive().build();
  const std::size_t eocd = bytes.size() - 22;
  std::string bad = bytes;
  bad[eocd + 16] = '\x7f';  // central directory offset far past the end
  auto zip = ZipReader::open(bytesOf(bad), "t.zip");
  ASSERT_FALSE(zip.isOk());
  EXPECT_NE(zip.status().message().find("central directory ["), std::string::npos) << zip.status().message();
  bad = bytes;
  bad[eocd + 10] = '\x7f';  // 127 entries claimed
  zip = ZipReader::open(bytesOf(bad), "t.zip");
  ASSERT_FALSE(zip.isOk());
  EXPECT_NE(zip.status().message().find("127 entries cannot fit"), std::string::npos)
      << zip.status().message();
  ZipBuilder dup;
  dup.add("a", "1");
  dup.add("a", "2");
  const std::string d = dup.build();
  zip = ZipReader::open(bytesOf(d), "t.zip");
  ASSERT_FALSE(zip.isOk());
  EXPECT_NE(zip.status().message().find("entry name 'a' appears twice"), std::string::npos);
}

// Writes `value` little-endian over bytes [at, at + size) of `bytes`.
void patchLE(std::string& bytes, std::size_t at, std::uint64_t value, int size) {
  for (int i = 0; i < size; ++i) bytes[at + i] = static_cast<char>((value >> (8 * i)) & 0xFF);
}

// Issue 42 (Low): the end records' entry count and directory size, and each name's
// length, are refused past explicit limits before anything is reserved or read, with
// the file and the field named (NOTE [Zip directory limits]).
TEST(ZipReader, DeclaredEntryCountBeyondTheLimitIsRefused) {
  std::string bytes = sampleArchive().build(/*zip64End=*/true);
  const std::size_t zip64End = bytes.rfind(std::string("PK\x06\x06", 4));
  ASSERT_NE(zip64End, std::string::npos);
  patchLE(bytes, zip64End + 32, kZipMaxEntries + 1, 8);  // total entries
  auto zip = ZipReader::open(bytesOf(bytes), "many.zip");
  ASSERT_FALSE(zip.isOk());
  EXPECT_EQ(zip.status().code(), Status::Code::kCorruption);
  EXPECT_EQ(zip.status().message(), "many.zip: not a valid zip archive: the end record declares " +
                                        std::to_string(kZipMaxEntries + 1) +
                                        " central directory entries, more than the " +
                                        std::to_string(kZipMaxEntries) + " this reader accepts");
  EXPECT_FALSE(readZipDirectory(bytesOf(bytes), "many.zip").isOk());
}

TEST(ZipReader, DeclaredDirectorySizeBeyondTheLimitIsRefused) {
  // ZIP64: a directory of 1 TiB declared by a file of a few hundred bytes.
  std::string bytes = sampleArchive().build(/*zip64End=*/true);
  const std::size_t zip64End = bytes.rfind(std::string("PK\x06\x06", 4));
  ASSERT_NE(zip64End, std::string::npos);
  patchLE(bytes, zip64End + 40, std::uint64_t{1} << 40, 8);  // directory size
  auto zip = ZipReader::open(bytesOf(bytes), "big.zip");
  ASSERT_FALSE(zip.isOk());
  EXPECT_NE(zip.status().message().find("big.zip: not a valid zip archive: the end record declares a central "
                                        "directory of 1099511627776 bytes, more than the " +
                                        std::to_string(kZipMaxDirectoryBytes)),
            std::string::npos)
      << zip.status().message();
  auto extent = findZipDirectory(bytesOf(bytes), "big.zip");  // what a sparse mirror asks first
  ASSERT_FALSE(extent.isOk());
  EXPECT_NE(extent.status().message().find("central directory of 1099511627776 bytes"), std::string::npos);

  // The 32-bit end record: 4 GiB - 1.
  bytes = sampleArchive().build();
  patchLE(bytes, bytes.size() - 22 + 12, 0xFFFFFFFFu, 4);
  zip = ZipReader::open(bytesOf(bytes), "big.zip");
  ASSERT_FALSE(zip.isOk());
  EXPECT_NE(zip.status().message().find("central directory of 4294967295 bytes, more than"),
            std::string::npos)
      << zip.status().message();
}

TEST(ZipReader, NameLongerThanTheLimitIsRefused) {
  ZipBuilder z;
  z.add("archive/data.pkl", "p");
  z.add(std::string(kZipMaxNameBytes + 1, 'n'), "x");
  const std::string bytes = z.build();
  auto zip = ZipReader::open(bytesOf(bytes), "names.zip");
  ASSERT_FALSE(zip.isOk());
  EXPECT_EQ(zip.status().message(),
            "names.zip: not a valid zip archive: central directory entry 1: name length " +
                std::to_string(kZipMaxNameBytes + 1) + " is more than the " +
                std::to_string(kZipMaxNameBytes) + " bytes this reader accepts");
  // At the limit: read.
  ZipBuilder ok;
  ok.add(std::string(kZipMaxNameBytes, 'n'), "x");
  const std::string fine = ok.build();
  EXPECT_TRUE(ZipReader::open(bytesOf(fine), "names.zip").isOk());
}

TEST(ZipReader, CrcMismatchIsCorruption) {
  std::string bytes = sampleArchive().build();
  auto pos = bytes.find("pickle bytes");
  bytes[pos] = 'P';
  auto zip = ZipReader::open(bytesOf(bytes), "t.zip");
  ASSERT_TRUE(zip.isOk());
  auto st = zip->verifyCrc(*zip->find("archive/data.pkl"));
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_EQ(st.message(), "t.zip: entry 'archive/data.pkl' fails its CRC-32 check (corrupt file)");
}

// Python's zipfile switches to ZIP64 end records past 65535 entries.
TEST(ZipReader, PythonZipWithMoreThan65535Entries) {
  const std::string dir = test::makeTempDir("zip64");
  const std::string path = dir + "/many.zip";
  const std::string script =
      "import sys, zipfile\n"
      "with zipfile.ZipFile(sys.argv[1], 'w') as z:\n"
      "    for i in range(70000): z.writestr('archive/data/%d' % i, str(i))\n"
      "    with z.open('archive/big', 'w', force_zip64=True) as f: f.write(b'0123456789' * 1000)\n";
  std::ofstream(dir + "/make.py") << script;
  ASSERT_EQ(std::system((std::string(FS_PYTHON) + " " + dir + "/make.py " + path).c_str()), 0);
  auto file = MappedFile::open(path);
  ASSERT_TRUE(file.isOk()) << file.status().toString();
  auto zip = ZipReader::open(file->bytes(), path);
  ASSERT_TRUE(zip.isOk()) << zip.status().toString();
  ASSERT_EQ(zip->entries().size(), 70001u);
  EXPECT_EQ(text(zip->data(*zip->find("archive/data/69999")).value()), "69999");
  EXPECT_EQ(text(zip->data(*zip->find("archive/data/65536")).value()), "65536");
  const ZipEntry* big = zip->find("archive/big");
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->size, 10000u);
  EXPECT_TRUE(zip->verifyCrc(*big).isOk());
}

}  // namespace
}  // namespace fs::tensorfile
