// torch.save files written by Debian's PyTorch (make_fixtures.py) read back
// bit-exactly: every value, dtype, shape, stride, offset and byte.
#include "backend/tensorfile/torch_file.h"

#include <gtest/gtest.h>

#include "backend/tensorfile/state_dict.h"
#include "tests/backend/tensorfile/tensorfile_test_util.h"

namespace fs::tensorfile {
namespace {

using test::canon;
using test::expected;
using test::fixtureDir;

TorchFile openFixture(const std::string& name) {
  auto file = openTorchFile(fixtureDir() + "/" + name);
  EXPECT_TRUE(file.isOk()) << file.status().toString();
  if (!file) std::abort();
  return std::move(file.value());
}

class TorchFileTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TorchFileTest, ValueTreeMatchesPython) {
  FS_REQUIRE_FIXTURES();
  const TorchFile file = openFixture(GetParam());
  EXPECT_EQ(canon(file.root(), &file), expected()[GetParam()]["canon"].get<std::string>());
}

TEST_P(TorchFileTest, StorageSharingMatchesPython) {
  FS_REQUIRE_FIXTURES();
  const TorchFile file = openFixture(GetParam());
  auto flat = flattenTensors(file.root());
  ASSERT_TRUE(flat.isOk()) << flat.status().toString();
  const auto& groups = expected()[GetParam()]["tensors"];
  ASSERT_EQ(flat->size(), groups.size());
  std::map<int, std::string> keyOfGroup;
  for (std::size_t i = 0; i < flat->size(); ++i) {
    const NamedTensor& t = flat.value()[i];
    EXPECT_EQ(t.name, groups[i][0].get<std::string>());
    auto [it, inserted] = keyOfGroup.emplace(groups[i][1].get<int>(), t.tensor->storageKey);
    EXPECT_EQ(it->second, t.tensor->storageKey) << t.name << " should share a storage record";
    EXPECT_EQ(t.tensor->storageEntry, file.archiveFolder() + "/data/" + t.tensor->storageKey);
  }
  // Different Python storages are different records.
  std::set<std::string> keys;
  for (const auto& [group, key] : keyOfGroup) keys.insert(key);
  EXPECT_EQ(keys.size(), keyOfGroup.size());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TorchFileTest,
                         ::testing::Values("state_dict.pt", "state_dict_p4.pt", "checkpoint.pt", "misc.pt",
                                           "misc_p4.pt"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return n;
                         });

TEST(TorchFile, ArchiveFolderIsTheFileStemInTorch113) {
  FS_REQUIRE_FIXTURES();
  const TorchFile file = openFixture("state_dict.pt");
  EXPECT_EQ(file.archiveFolder(), "state_dict");
  EXPECT_EQ(file.formatVersion(), 3);
}

TEST(TorchFile, LayoutsOfViewsAndParameters) {
  FS_REQUIRE_FIXTURES();
  const TorchFile file = openFixture("state_dict.pt");
  const PyValue& sd = file.root();
  ASSERT_TRUE(sd.isDict() && sd.ordered);
  const TensorRef& t = *sd.find("transposed")->tensor;
  EXPECT_EQ(t.shape, (std::vector<std::int64_t>{6, 4}));
  EXPECT_EQ(t.strides, (std::vector<std::int64_t>{1, 6}));
  EXPECT_FALSE(t.isContiguous());
  EXPECT_EQ(t.storageKey, sd.find("base")->tensor->storageKey);
  const TensorRef& second = *sd.find("second_half")->tensor;
  EXPECT_EQ(second.storageOffset, 5);
  EXPECT_EQ(second.storageNumel, 10);
  const TensorRef& p = *sd.find("param")->tensor;
  EXPECT_TRUE(p.isParameter);
  EXPECT_TRUE(p.requiresGrad);
  EXPECT_TRUE(sd.find("frozen_param")->tensor->isParameter);
  EXPECT_FALSE(sd.find("frozen_param")->tensor->requiresGrad);
  EXPECT_TRUE(sd.find("grad_leaf")->tensor->requiresGrad);
  EXPECT_FALSE(sd.find("grad_leaf")->tensor->isParameter);
  EXPECT_EQ(sd.find("expanded")->tensor->strides, (std::vector<std::int64_t>{1, 0}));
}

TEST(TorchFile, TensorBytesAreZeroCopySpansOfTheFile) {
  FS_REQUIRE_FIXTURES();
  const TorchFile file = openFixture("state_dict.pt");
  const TensorRef& second = *file.root().find("second_half")->tensor;
  auto bytes = file.tensorBytes(second);
  ASSERT_TRUE(bytes.isOk()) << bytes.status().toString();
  EXPECT_EQ(bytes->size(), 5u * 8u);
  const auto whole = file.fileBytes();
  EXPECT_GE(bytes->data(), whole.data());
  EXPECT_LE(bytes->data() + bytes->size(), whole.data() + whole.size());
  EXPECT_EQ(static_cast<std::uint64_t>(bytes->data() - whole.data()), second.storageFileOffset + 5 * 8);
  std::int64_t first = 0;
  std::memcpy(&first, bytes->data(), 8);
  EXPECT_EQ(first, 5);  // whole = arange(10); second_half = whole[5:]
  // A transposed view spans its whole storage; the empty tensor spans nothing.
  EXPECT_EQ(file.tensorBytes(*file.root().find("transposed")->tensor)->size(), 24u * 4u);
  EXPECT_TRUE(file.tensorBytes(*file.root().find("empty")->tensor)->empty());
}

TEST(TorchFile, TensorBytesRejectsRefsOutsideTheirStorage) {
  FS_REQUIRE_FIXTURES();
  const TorchFile file = openFixture("state_dict.pt");
  TensorRef t = *file.root().find("second_half")->tensor;
  t.storageOffset = 6;  // 6 + 5 > 10 elements
  auto bytes = file.tensorBytes(t);
  ASSERT_FALSE(bytes.isOk());
  EXPECT_EQ(bytes.status().code(), Status::Code::kCorruption);
  EXPECT_NE(bytes.status().message().find("runs past its storage"), std::string::npos)
      << bytes.status().message();
  t = *file.root().find("second_half")->tensor;
  t.dtype = DType::kComplex128;  // 16-byte elements over an int64 storage
  EXPECT_FALSE(file.tensorBytes(t).isOk());
  t = *file.root().find("second_half")->tensor;
  t.storageEntry = "state_dict/data/999";
  EXPECT_EQ(file.tensorBytes(t).status().code(), Status::Code::kInvalidArgument);
}

TEST(TorchFile, OpenFlamingoCheckpointSections) {
  FS_REQUIRE_FIXTURES();
  const TorchFile file = openFixture("checkpoint.pt");
  const auto s = checkpointSections(file.root());
  ASSERT_NE(s.model, nullptr);
  ASSERT_NE(s.optimizer, nullptr);
  ASSERT_NE(s.scheduler, nullptr);
  EXPECT_EQ(s.epoch, 3);
  EXPECT_EQ(s.modelKey, "model_state_dict");
  EXPECT_TRUE(isFlatStateDict(*s.model));
  auto model = flattenTensors(*s.model);
  ASSERT_TRUE(model.isOk());
  std::vector<std::string> names;
  for (const auto& t : model.value()) names.push_back(t.name);
  EXPECT_EQ(names, expected()["checkpoint.pt"]["model_keys"].get<std::vector<std::string>>());
  // state_dict()'s _metadata survives as the OrderedDict's BUILD state.
  ASSERT_NE(s.model->state, nullptr);
  ASSERT_TRUE(s.model->state->isDict());
  const PyValue* meta = s.model->state->find("_metadata");
  ASSERT_NE(meta, nullptr);
  std::vector<std::string> metaKeys;
  for (const auto& [k, v] : meta->entries) metaKeys.push_back(k->text);
  EXPECT_EQ(metaKeys, expected()["checkpoint.pt"]["metadata_keys"].get<std::vector<std::string>>());
  // Optimizer state is keyed by int parameter ids.
  const PyValue* state = s.optimizer->find("state");
  ASSERT_NE(state, nullptr);
  ASSERT_FALSE(state->entries.empty());
  EXPECT_EQ(state->entries[0].first->kind, PyKind::kInt);
  auto opt = flattenTensors(*s.optimizer);
  ASSERT_TRUE(opt.isOk());
  EXPECT_EQ(opt->front().name, "state.0.step");
  const PyValue* groups = s.optimizer->find("param_groups");
  ASSERT_TRUE(groups && groups->kind == PyKind::kList && groups->items.size() == 2);
  EXPECT_EQ(groups->items[0]->find("weight_decay")->asDouble(), 0.1);
  EXPECT_EQ(s.scheduler->find("last_epoch")->asInt(), 2);
}

TEST(TorchFile, PyTorch2Forms) {
  FS_REQUIRE_FIXTURES();
  const TorchFile file = openFixture("torch2x.pt");
  EXPECT_EQ(file.archiveFolder(), "archive");
  EXPECT_EQ(canon(file.root(), &file), expected()["torch2x.pt"]["canon"].get<std::string>());
  const TensorRef& p = *file.root().find("p")->tensor;
  EXPECT_TRUE(p.isParameter);
  const TensorRef& meta = *file.root().find("meta")->tensor;
  EXPECT_TRUE(meta.isMeta);
  EXPECT_EQ(file.tensorBytes(meta).status().code(), Status::Code::kUnsupported);
}

TEST(TorchFile, LegacyFormatIsReportedWithTheFix) {
  FS_REQUIRE_FIXTURES();
  auto file = openTorchFile(fixtureDir() + "/legacy.pt");
  ASSERT_FALSE(file.isOk());
  EXPECT_EQ(file.status().code(), Status::Code::kUnsupported);
  EXPECT_EQ(file.status().message(),
            fixtureDir() +
                "/legacy.pt: legacy torch.save format (PyTorch < 1.6) is not supported; re-save with "
                "torch.save(..., _use_new_zipfile_serialization=True)");
}

TEST(TorchFile, MissingAndNonTorchFiles) {
  auto missing = openTorchFile("/nonexistent/ckpt.pt");
  ASSERT_FALSE(missing.isOk());
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/ckpt.pt"), std::string::npos);
  EXPECT_NE(missing.status().message().find("No such file"), std::string::npos);
  auto text = TorchFile::fromMapped(MappedFile::fromBytes("notes.txt", test::toBytes("hello world")));
  ASSERT_FALSE(text.isOk());
  EXPECT_EQ(text.status().message(),
            "notes.txt: not a torch.save file (expected a zip archive starting with 'PK')");
}

TEST(TorchFile, UnknownClassesBecomeObjectsWithTheirState) {
  FS_REQUIRE_FIXTURES();
  const TorchFile file = openFixture("misc.pt");
  const PyValue* thing = file.root().find("thing");
  ASSERT_NE(thing, nullptr);
  EXPECT_EQ(thing->kind, PyKind::kObject);
  EXPECT_EQ(thing->typeName(), "__main__.Thing");
  ASSERT_NE(thing->state, nullptr);
  EXPECT_EQ(thing->state->find("a")->asInt(), 7);
}

}  // namespace
}  // namespace fs::tensorfile
