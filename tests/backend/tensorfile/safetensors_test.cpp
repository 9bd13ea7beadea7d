// safetensors: files written by hand in Python read back; our writer's files
// read by the safetensors package (safe_open) and by ours; malformed headers rejected.
#include "backend/tensorfile/safetensors.h"

#include <gtest/gtest.h>

#include "tests/backend/tensorfile/tensorfile_test_util.h"

namespace fs::tensorfile {
namespace {

using Json = nlohmann::json;

Json readJson(const std::string& path) {
  std::ifstream in(path);
  return Json::parse(in, nullptr, false);
}

// {name: [dtype, shape, hex]} of everything in `file`.
Json summary(const SafetensorsFile& file) {
  Json out = Json::object();
  for (const auto& t : file.tensors()) {
    out[t.name] = Json::array({std::string(safetensorsName(t.dtype)), t.shape, test::hex(file.bytes(t))});
  }
  return out;
}

TEST(Safetensors, ReadsAFileWrittenByHandInPython) {
  const std::string dir = test::makeTempDir("st");
  ASSERT_TRUE(test::runPython("write_safetensors.py", dir + "/py.safetensors " + dir + "/py.json"));
  auto file = SafetensorsFile::open(dir + "/py.safetensors");
  ASSERT_TRUE(file.isOk()) << file.status().toString();
  const Json want = readJson(dir + "/py.json");
  EXPECT_EQ(summary(file.value()), want["tensors"]);
  EXPECT_EQ(Json(file->metadata()), want["metadata"]);
  // Header order is kept.
  EXPECT_EQ(file->tensors().front().name, "z.weight");
  const SafetensorsEntry* w = file->find("z.weight");
  ASSERT_NE(w, nullptr);
  const TensorView v = file->view(*w);
  EXPECT_EQ(v.strides, (std::vector<std::int64_t>{2, 1}));
  float f[4];
  std::memcpy(f, v.bytes.data(), 16);
  EXPECT_EQ(f[1], -2.0f);
}

TEST(Safetensors, WriterRoundTripsEveryDtypeAndPythonReadsIt) {
  const std::string dir = test::makeTempDir("st");
  std::vector<std::vector<std::byte>> storage;
  std::vector<SafetensorsTensor> tensors;
  const DType all[] = {DType::kFloat64, DType::kFloat32, DType::kFloat16,    DType::kBFloat16,
                       DType::kInt64,   DType::kInt32,   DType::kInt16,      DType::kInt8,
                       DType::kUInt8,   DType::kBool,    DType::kComplex64,  DType::kUInt16,
                       DType::kUInt32,  DType::kUInt64,  DType::kFloat8E4M3, DType::kFloat8E5M2};
  int seed = 1;
  for (DType d : all) {
    const std::vector<std::int64_t> shape =
        seed % 3 == 0 ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{2, 3};
    std::vector<std::byte> data(static_cast<std::size_t>(numelOf(shape)) * itemSize(d));
    for (auto& b : data) b = static_cast<std::byte>((seed++ * 37) & 0xFF);
    storage.push_back(std::move(data));
    tensors.push_back({"t." + std::string(safetensorsName(d)), d, shape, storage.back()});
  }
  tensors.push_back({"empty", DType::kFloat32, {0}, {}});
  const std::string path = dir + "/ours.safetensors";
  ASSERT_TRUE(writeSafetensors(path, tensors, {{"format", "pt"}}).isOk());

  auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(file.isOk()) << file.status().toString();
  ASSERT_EQ(file->tensors().size(), tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const SafetensorsEntry& e = file->tensors()[i];
    EXPECT_EQ(e.name, tensors[i].name);
    EXPECT_EQ(e.dtype, tensors[i].dtype);
    EXPECT_EQ(e.shape, tensors[i].shape);
    EXPECT_EQ(test::hex(file->bytes(e)), test::hex(tensors[i].data));
  }
  EXPECT_EQ(file->metadata().at("format"), "pt");

  ASSERT_TRUE(test::runPython("read_safetensors.py", path + " " + dir + "/ours.json"));
  const Json py = readJson(dir + "/ours.json");
  EXPECT_EQ(py["tensors"], summary(file.value()));
  EXPECT_EQ(py["metadata"]["format"], "pt");
}

TEST(Safetensors, WriterRejectsBadInput) {
  const std::string dir = test::makeTempDir("st");
  std::vector<std::byte> four(4);
  EXPECT_EQ(writeSafetensors(dir + "/x", {{"a", DType::kFloat32, {2}, four}}).code(),
            Status::Code::kInvalidArgument);
  EXPECT_FALSE(
      writeSafetensors(dir + "/x", {{"a", DType::kFloat32, {1}, four}, {"a", DType::kFloat32, {1}, four}})
          .isOk());
  EXPECT_FALSE(writeSafetensors(dir + "/x", {{"__metadata__", DType::kFloat32, {1}, four}}).isOk());
  EXPECT_FALSE(std::filesystem::exists(dir + "/x"));
}

std::string fileWithHeader(const std::string& header, const std::string& data) {
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  return out + header + data;
}

void expectRejected(const std::string& bytes, const std::string& fragment,
                    Status::Code code = Status::Code::kCorruption) {
  auto file = SafetensorsFile::fromMapped(MappedFile::fromBytes("bad.safetensors", test::toBytes(bytes)));
  ASSERT_FALSE(file.isOk()) << "accepted: " << fragment;
  EXPECT_EQ(file.status().code(), code) << file.status().toString();
  EXPECT_NE(file.status().message().find(fragment), std::string::npos) << file.status().message();
  EXPECT_EQ(file.status().message().rfind("bad.safetensors: ", 0), 0u);
}

TEST(Safetensors, MalformedHeadersAreRejected) {
  const std::string t = R"("t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]})";
  const std::string data8(8, '\0');
  EXPECT_TRUE(SafetensorsFile::fromMapped(
                  MappedFile::fromBytes("ok", test::toBytes(fileWithHeader("{" + t + "}", data8))))
                  .isOk());
  expectRejected("abc", "too short");
  expectRejected(std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8), "exceeds 100 MiB");
  expectRejected(std::string("\x40\x00\x00\x00\x00\x00\x00\x00{}", 10), "runs past the end of the file");
  expectRejected(fileWithHeader("[1, 2]", ""), "does not start with '{'");
  expectRejected(fileWithHeader("{\"t\": ", ""), "not a valid JSON object");
  expectRejected(fileWithHeader(R"({"t": {"shape": [2], "data_offsets": [0, 8]}})", data8),
                 "no string \"dtype\"");
  expectRejected(fileWithHeader(R"({"t": {"dtype": "F4", "shape": [2], "data_offsets": [0, 8]}})", data8),
                 "dtype 'F4', which is not supported", Status::Code::kUnsupported);
  expectRejected(fileWithHeader(R"({"t": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", data8),
                 "non-negative");
  expectRejected(fileWithHeader(R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0]}})", data8),
                 "no \"data_offsets\"");
  expectRejected(fileWithHeader(R"({"t": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", data8),
                 "do not span 12 bytes");
  expectRejected(
      fileWithHeader(
          R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "u": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
          data8),
      "overlaps");
  expectRejected(fileWithHeader(R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", data8),
                 "4 unused bytes before tensor 't'");
  expectRejected(fileWithHeader("{" + t + "}", std::string(4, '\0')), "(truncated file?)");
  expectRejected(fileWithHeader("{" + t + "}", std::string(12, '\0')),
                 "tensors cover 8 bytes but the data section holds 12");
  expectRejected(fileWithHeader(R"({"__metadata__": {"a": 1}})", ""),
                 "__metadata__ value 'a' is not a string");
  expectRejected(
      fileWithHeader(R"({"t": {"dtype": "F32", "shape": [4611686018427387904, 4], "data_offsets": [0, 8]}})",
                     data8),
      "overflows");
}

}  // namespace
}  // namespace fs::tensorfile
