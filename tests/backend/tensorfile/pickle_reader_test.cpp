// The unpickler: Python's own pickles of every protocol (oracle), torch
// reconstructors, and hostile inputs (each must give a clear error, not a
// crash, hang or leak).
#include "backend/tensorfile/pickle_reader.h"

#include <gtest/gtest.h>

#include "tests/backend/tensorfile/tensorfile_test_util.h"

namespace fs::tensorfile {
namespace {

using namespace std::string_literals;
using test::canon;

StatusOr<PyValuePtr> unpickleText(const std::string& bytes, const PickleOptions& options = {}) {
  return unpickle(std::as_bytes(std::span(bytes.data(), bytes.size())), options);
}

// Small pickle builders (protocol 2 opcodes).
std::string str(const std::string& s) {
  std::string out = "X";
  for (int i = 0; i < 4; ++i) out += static_cast<char>((s.size() >> (8 * i)) & 0xFF);
  return out + s;
}
std::string int1(int v) {
  return std::string("K") + static_cast<char>(v);
}
std::string global(const std::string& module, const std::string& name) {
  return "c" + module + "\n" + name + "\n";
}
const std::string kEmptyOrderedDict = global("collections", "OrderedDict") + ")R";

// torch._utils._rebuild_tensor_v2 over ('storage', torch.<storageClass>, key, 'cpu', numel).
std::string tensorPickle(const std::string& storageClass, int numel, int offset, const std::string& size,
                         const std::string& stride) {
  return global("torch._utils", "_rebuild_tensor_v2") + "((" + str("storage") +
         global("torch", storageClass) + str("0") + str("cpu") + int1(numel) + "tQ" + int1(offset) + size +
         stride + "\x89" + kEmptyOrderedDict + "tR";
}

void expectError(const std::string& bytes, Status::Code code, const std::string& fragment) {
  auto v = unpickleText(bytes);
  ASSERT_FALSE(v.isOk()) << "accepted: " << canon(*v.value());
  EXPECT_EQ(v.status().code(), code) << v.status().toString();
  EXPECT_NE(v.status().message().find(fragment), std::string::npos) << v.status().message();
}

TEST(PickleReader, PythonProtocols0To5MatchPython) {
  FS_REQUIRE_FIXTURES();
  for (int proto = 0; proto <= 5; ++proto) {
    const std::string name = "plain_p" + std::to_string(proto) + ".pkl";
    const auto bytes = test::readBytes(test::fixtureDir() + "/" + name);
    auto v = unpickle(bytes, {.sourceName = name});
    ASSERT_TRUE(v.isOk()) << v.status().toString();
    EXPECT_EQ(canon(*v.value()), test::expected()[name]["canon"].get<std::string>()) << name;
  }
}

TEST(PickleReader, Integers) {
  EXPECT_EQ(canon(*unpickleText("\x80\x02K\x05.").value()), "i5");
  EXPECT_EQ(canon(*unpickleText(std::string("\x8a\x00.", 3)).value()), "i0");
  EXPECT_EQ(canon(*unpickleText("\x8a\x01\xff.").value()), "i-1");
  EXPECT_EQ(canon(*unpickleText(std::string("\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01.", 12)).value()),
            "i18446744073709551616");
  EXPECT_EQ(canon(*unpickleText(std::string("\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\xfe.", 12)).value()),
            "i-18446744073709551617");
  EXPECT_EQ(canon(*unpickleText("I123456789012345678901234567890\n.").value()),
            "i123456789012345678901234567890");
  EXPECT_EQ(canon(*unpickleText("I01\n.").value()), "T");
  EXPECT_EQ(canon(*unpickleText("L-42L\n.").value()), "i-42");
}

TEST(PickleReader, DictsKeepOrderAndAnyHashableKey) {
  auto v =
      unpickleText("}(" + int1(2) + "N" + int1(1) + "N" + str("a") + int1(1) + str("a") + int1(2) + "u.");
  ASSERT_TRUE(v.isOk()) << v.status().toString();
  EXPECT_EQ(canon(*v.value()), "{i2:N,i1:N,s1:a:i2,}");  // 'a' set twice: one entry, last value
  expectError("}]" + int1(1) + "s.", Status::Code::kCorruption, "unhashable key of type list");
}

TEST(PickleReader, MemoIndicesNeedNotBeDense) {
  // BINPUT 5, LONG_BINPUT 2^32-1, MEMOIZE (len(memo) == 2) on a fresh memo.
  auto v = unpickleText(int1(1) +
                        "q\x05"
                        "0"s +
                        int1(2) +
                        "r\xff\xff\xff\xff"
                        "0"s +
                        int1(3) +
                        "\x94"
                        "0"s +
                        "h\x05j\xff\xff\xff\xffh\x02\x87."s);
  ASSERT_TRUE(v.isOk()) << v.status().toString();
  EXPECT_EQ(canon(*v.value()), "(i1,i2,i3,)");
}

TEST(PickleReader, UnknownGlobalsAreNeverCalled) {
  auto v = unpickleText(global("os", "system") + str("rm -rf /") + "\x85R.");
  ASSERT_TRUE(v.isOk()) << v.status().toString();
  EXPECT_EQ(v.value()->kind, PyKind::kObject);
  EXPECT_EQ(v.value()->text, "os.system");
  ASSERT_EQ(v.value()->object->args.size(), 1u);
  EXPECT_EQ(v.value()->object->args[0]->text, "rm -rf /");
}

TEST(PickleReader, TensorWithoutResolverKeepsItsLayout) {
  auto v = unpickleText(
      tensorPickle("HalfStorage", 6, 1, int1(2) + int1(2) + "\x86", int1(2) + int1(1) + "\x86") + ".");
  ASSERT_TRUE(v.isOk()) << v.status().toString();
  const TensorRef& t = *v.value()->tensor;
  EXPECT_EQ(t.dtype, DType::kFloat16);
  EXPECT_EQ(t.shape, (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(t.storageOffset, 1);
  EXPECT_FALSE(t.storageReadable);
}

TEST(PickleReader, ResolverErrorsAbort) {
  PickleOptions options;
  options.resolveStorage = [](const std::string& key) -> StatusOr<StorageRecord> {
    return Status::corruption("record " + key + " missing");
  };
  auto v =
      unpickleText(tensorPickle("FloatStorage", 2, 0, int1(2) + "\x85", int1(1) + "\x85") + ".", options);
  ASSERT_FALSE(v.isOk());
  EXPECT_EQ(v.status().message(), "record 0 missing");
  options.resolveStorage = [](const std::string& key) -> StatusOr<StorageRecord> {
    return StorageRecord{"archive/data/" + key, 100, 4, true};  // 4 bytes, but the id says 2 floats
  };
  v = unpickleText(tensorPickle("FloatStorage", 2, 0, int1(2) + "\x85", int1(1) + "\x85") + ".", options);
  ASSERT_FALSE(v.isOk());
  EXPECT_NE(v.status().message().find("holds 4 bytes but its id says 2 torch.float32 elements"),
            std::string::npos)
      << v.status().message();
}

TEST(PickleReader, TensorsOutsideTheirStorageAreRejected) {
  expectError(tensorPickle("FloatStorage", 2, 0, int1(3) + "\x85", int1(1) + "\x85") + ".",
              Status::Code::kCorruption, "reaches past the end of storage");
  expectError(tensorPickle("FloatStorage", 4, 3, int1(2) + "\x85", int1(1) + "\x85") + ".",
              Status::Code::kCorruption, "reaches past the end of storage");
  expectError(tensorPickle("FloatStorage", 4, 0, int1(2) + "\x85", "J\xff\xff\xff\xff\x85") + ".",
              Status::Code::kCorruption, "negative size or stride");
  std::string dims = "(";
  for (int i = 0; i < 65; ++i) dims += int1(1);
  expectError(tensorPickle("FloatStorage", 4, 0, dims + "t", dims + "t") + ".", Status::Code::kCorruption,
              "> 64");
  expectError(tensorPickle("QInt8Storage", 4, 0, int1(2) + "\x85", int1(1) + "\x85") + ".",
              Status::Code::kUnsupported, "storage type <torch.QInt8Storage> is not supported");
}

TEST(PickleReader, MalformedInputsGiveClearErrors) {
  expectError("", Status::Code::kCorruption, "no STOP opcode");
  expectError("]h\x05."s, Status::Code::kCorruption, "byte 1 (BINGET): memo index 5 was never stored");
  expectError("a.", Status::Code::kCorruption, "(APPEND): stack underflow");
  expectError("(K\x01t", Status::Code::kCorruption, "no STOP opcode before the end");
  expectError("e.", Status::Code::kCorruption, "no MARK");
  expectError("\x80\x06N.", Status::Code::kUnsupported, "pickle protocol 6");
  expectError("\xff", Status::Code::kCorruption, "unknown opcode 0xff");
  expectError("X\xff\xff\xff\x7f", Status::Code::kCorruption, "needs 2147483647 bytes");
  expectError("\x8d\xff\xff\xff\xff\xff\xff\xff\xff", Status::Code::kCorruption, "(BINUNICODE8): needs");
  expectError("K\x01(\x85.", Status::Code::kCorruption,
              "(TUPLE1): stack underflow");  // items below a MARK are hidden
  expectError("K\x01K\x02\x93.", Status::Code::kCorruption, "module and name must be str");
  expectError("K\x01}b.", Status::Code::kCorruption, "cannot set the state of a int");
  expectError(str("abc") + "Q.", Status::Code::kUnsupported, "is not a torch storage id");
  expectError("\x82\x01.", Status::Code::kUnsupported, "extension registry");
  expectError("\x97.", Status::Code::kUnsupported, "out-of-band buffers");
  expectError(std::string("\x8b\x00\x00\x00\x80.", 6), Status::Code::kCorruption, "negative LONG4 length");
  expectError(std::string("\x8b\x00\x10\x00\x00", 5) + std::string(4096, '\x01') + ".",
              Status::Code::kUnsupported, "integer of 4096 bytes");
  expectError("S'abc\n.", Status::Code::kCorruption, "not a quoted literal");
  expectError("I12x\n.", Status::Code::kCorruption, "bad integer text");
  expectError("N)R.", Status::Code::kCorruption, "cannot call a None");
}

TEST(PickleReader, CyclesAreRejectedAndFreed) {
  expectError(
      "]q\x00h\x00"
      "a."s,
      Status::Code::kCorruption, "cycle");
  // A cycle that is garbage (not reachable from the result) is freed, not leaked.
  auto v = unpickleText(
      "]q\x00h\x00"
      "a0N."s);
  ASSERT_TRUE(v.isOk()) << v.status().toString();
  EXPECT_TRUE(v.value()->isNone());
}

TEST(PickleReader, DeepNestingIsRejectedWithoutRecursion) {
  std::string ok(kMaxPyDepth - 1, ']');
  ok += std::string(kMaxPyDepth - 2, 'a') + ".";
  EXPECT_TRUE(unpickleText(ok).isOk());
  std::string deep(kMaxPyDepth + 1, ']');
  deep += std::string(kMaxPyDepth, 'a') + ".";
  expectError(deep, Status::Code::kCorruption, "nest deeper than 256");
  // A million levels: rejected and freed without deep destructor recursion.
  std::string bomb(1'000'000, ']');
  bomb += std::string(999'999, 'a') + ".";
  expectError(bomb, Status::Code::kCorruption, "nest deeper");
  // Shared subtrees count at every place they appear.
  // (X, [[...[X]...]]): X (200 deep) is first seen at depth 1, then again under 100 levels.
  std::string shared(200, ']');
  shared += std::string(199, 'a') + "q\x00"s + std::string(100, ']') +
            "h\x00"
            "a"s +
            std::string(99, 'a') + "\x86.";
  expectError(shared, Status::Code::kCorruption, "nest deeper");
}

TEST(PickleReader, AmplificationHitsTheWorkBudget) {
  std::string p = "(";
  for (int i = 0; i < 100000; ++i) p += int1(1);
  p += "lq\x00"
       "0"s +
       global("__builtin__", "set") +
       "q\x01"
       "0";
  for (int i = 0; i < 10000; ++i) p += "h\x01h\x00\x85R0"s;
  p += "N.";
  const auto start = std::chrono::steady_clock::now();
  expectError(p, Status::Code::kCorruption, "more work than its size allows");
  // Without the budget this is 10^9 set inserts (minutes); with it, well under a second (optimised).
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST(PickleReader, DebugStringIsShortAndPythonLike) {
  auto v = unpickleText("}(" + str("a") + int1(1) + str("b") + "](" + int1(1) + int1(2) + "e" + str("c") +
                        "G\x3f\xf8\0\0\0\0\0\0u."s);
  ASSERT_TRUE(v.isOk()) << v.status().toString();
  EXPECT_EQ(toDebugString(*v.value()), "{'a': 1, 'b': [1, 2], 'c': 1.5}");
  EXPECT_EQ(toDebugString(*v.value(), 0), "{'a': 1, 'b': ..., 'c': 1.5}");
  EXPECT_EQ(toDebugString(*v.value(), 4, 1), "{'a': 1, ...(3 items)}");
}

}  // namespace
}  // namespace fs::tensorfile
