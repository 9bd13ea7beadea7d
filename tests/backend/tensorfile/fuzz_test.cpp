// Fuzz-style robustness: truncations and random byte changes of valid files
// written by PyTorch (fixed seeds). Every outcome must be an error status or a
// valid tree whose tensors can be walked and read; never a crash or a hang.
// Run under FS_ENABLE_ASAN=ON to catch memory errors and leaks as well.
#include <gtest/gtest.h>

#include <iostream>
#include <random>

#include "backend/tensorfile/safetensors.h"
#include "backend/tensorfile/state_dict.h"
#include "backend/tensorfile/torch_file.h"
#include "tests/backend/tensorfile/tensorfile_test_util.h"

namespace fs::tensorfile {
namespace {

struct Outcomes {
  int ok = 0;
  int errors = 0;
};

// Walks everything a reader of the tree would touch.
void exercise(const TorchFile& file) {
  (void)toDebugString(file.root(), 6, 16);
  (void)checkpointSections(file.root());
  auto flat = flattenTensors(file.root(), {.maxVisits = 1'000'000});
  if (!flat) return;
  for (const auto& t : flat.value()) {
    auto bytes = file.contiguousBytes(*t.tensor);
    if (bytes) {
      ASSERT_EQ(bytes->size(), t.tensor->byteSize());
    }
  }
}

void openMutated(std::vector<std::byte> bytes, bool verifyCrc, Outcomes& out) {
  auto file = TorchFile::fromMapped(MappedFile::fromBytes("fuzz.pt", std::move(bytes)),
                                    {.verifyPickleCrc = verifyCrc});
  if (!file) {
    ASSERT_FALSE(file.status().message().empty());
    ASSERT_EQ(file.status().message().rfind("fuzz.pt", 0), 0u) << file.status().message();
    ++out.errors;
    return;
  }
  ++out.ok;
  exercise(file.value());
}

class TorchFileFuzz : public ::testing::TestWithParam<const char*> {};

TEST_P(TorchFileFuzz, TruncationsNeverCrash) {
  FS_REQUIRE_FIXTURES();
  const auto full = test::readBytes(test::fixtureDir() + "/" + GetParam());
  ASSERT_FALSE(full.empty());
  Outcomes out;
  for (std::size_t n = 0; n < full.size(); n += 7) {
    openMutated(std::vector<std::byte>(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n)), true,
                out);
  }
  EXPECT_EQ(out.ok, 0) << "a truncated archive was accepted";
}

TEST_P(TorchFileFuzz, ByteFlipsNeverCrash) {
  FS_REQUIRE_FIXTURES();
  const auto full = test::readBytes(test::fixtureDir() + "/" + GetParam());
  Outcomes out;
  for (std::uint32_t seed = 0; seed < 1500; ++seed) {
    std::mt19937 rng(seed);
    auto bytes = full;
    const int flips = 1 + static_cast<int>(rng() % 8);
    for (int i = 0; i < flips; ++i) bytes[rng() % bytes.size()] = static_cast<std::byte>(rng() & 0xFF);
    openMutated(std::move(bytes), seed % 2 == 0, out);
  }
  std::cout << "[fuzz] " << GetParam() << " byte flips: " << out.ok << " valid, " << out.errors
            << " errors\n";
  EXPECT_GT(out.errors, 0);
  EXPECT_GT(out.ok, 0);  // flips inside tensor data leave a valid file
}

// Mutations of data.pkl itself (CRC bypassed), resolved against the real storages.
TEST_P(TorchFileFuzz, PickleMutationsNeverCrash) {
  FS_REQUIRE_FIXTURES();
  auto valid = TorchFile::open(test::fixtureDir() + "/" + GetParam());
  ASSERT_TRUE(valid.isOk()) << valid.status().toString();
  const ZipReader& zip = valid->zip();
  const std::string folder = valid->archiveFolder();
  const auto pkl = zip.data(*zip.find(folder + "/data.pkl")).value();
  PickleOptions options;
  options.sourceName = "fuzz.pkl";
  options.resolveStorage = [&](const std::string& key) -> StatusOr<StorageRecord> {
    const ZipEntry* e = zip.find(folder + "/data/" + key);
    if (!e) return Status::corruption("fuzz.pkl: byte ?: no record " + key);
    return StorageRecord{e->name, e->dataOffset, e->size, true};
  };
  Outcomes out;
  for (std::uint32_t seed = 0; seed < 3000; ++seed) {
    std::mt19937 rng(seed);
    std::vector<std::byte> bytes(pkl.begin(), pkl.end());
    if (seed % 3 == 0) bytes.resize(rng() % bytes.size());
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips && !bytes.empty(); ++i)
      bytes[rng() % bytes.size()] = static_cast<std::byte>(rng() & 0xFF);
    auto v = unpickle(bytes, options);
    if (!v) {
      ASSERT_EQ(v.status().message().rfind("fuzz.pkl: byte ", 0), 0u) << v.status().message();
      ++out.errors;
      continue;
    }
    ++out.ok;
    (void)toDebugString(*v.value(), 8, 32);
    auto flat = flattenTensors(*v.value(), {.maxVisits = 1'000'000});
    if (!flat) continue;
    for (const auto& t : flat.value()) {
      auto bytesOfTensor = valid->contiguousBytes(*t.tensor);  // re-validated against the real file
      if (bytesOfTensor) {
        ASSERT_EQ(bytesOfTensor->size(), t.tensor->byteSize());
      }
    }
  }
  std::cout << "[fuzz] " << GetParam() << " pickle mutations: " << out.ok << " valid, " << out.errors
            << " errors\n";
  EXPECT_GT(out.errors, 0);
  EXPECT_GT(out.ok, 0);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TorchFileFuzz,
                         ::testing::Values("state_dict.pt", "checkpoint.pt", "misc_p4.pt"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return n;
                         });

TEST(SafetensorsFuzz, FlipsAndTruncationsNeverCrash) {
  const std::string path = test::makeTempDir("stfuzz") + "/f.safetensors";
  std::vector<std::byte> a(24, std::byte{1}), b(6, std::byte{2});
  ASSERT_TRUE(
      writeSafetensors(path, {{"a", DType::kFloat32, {2, 3}, a}, {"b", DType::kInt16, {3}, b}}, {{"k", "v"}})
          .isOk());
  const auto full = test::readBytes(path);
  Outcomes out;
  for (std::uint32_t seed = 0; seed < 2000; ++seed) {
    std::mt19937 rng(seed);
    auto bytes = full;
    if (seed % 4 == 0) bytes.resize(rng() % bytes.size());
    for (int i = 0; i < 1 + static_cast<int>(rng() % 4) && !bytes.empty(); ++i) {
      bytes[rng() % bytes.size()] = static_cast<std::byte>(rng() & 0xFF);
    }
    auto file = SafetensorsFile::fromMapped(MappedFile::fromBytes("fuzz.safetensors", std::move(bytes)));
    if (!file) {
      ++out.errors;
      continue;
    }
    ++out.ok;
    for (const auto& t : file->tensors()) (void)toContiguous(file->view(t));
  }
  EXPECT_GT(out.errors, 0);
}

}  // namespace
}  // namespace fs::tensorfile
