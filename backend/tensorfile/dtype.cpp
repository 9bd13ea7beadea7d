#include "backend/tensorfile/dtype.h"

#include <array>

namespace fs::tensorfile {
namespace {

struct DTypeInfo {
  DType dtype;
  std::size_t size;
  std::string_view torch;  // without the "torch." prefix
  std::string_view safetensors;
  std::string_view storageClass;  // legacy typed storage; empty if none
  std::string_view c10;           // c10::toString(ScalarType): the sharded index's spelling
};

constexpr std::array<DTypeInfo, 17> kTable = {{
    {DType::kFloat64, 8, "float64", "F64", "DoubleStorage", "Double"},
    {DType::kFloat32, 4, "float32", "F32", "FloatStorage", "Float"},
    {DType::kFloat16, 2, "float16", "F16", "HalfStorage", "Half"},
    {DType::kBFloat16, 2, "bfloat16", "BF16", "BFloat16Storage", "BFloat16"},
    {DType::kInt64, 8, "int64", "I64", "LongStorage", "Long"},
    {DType::kInt32, 4, "int32", "I32", "IntStorage", "Int"},
    {DType::kInt16, 2, "int16", "I16", "ShortStorage", "Short"},
    {DType::kInt8, 1, "int8", "I8", "CharStorage", "Char"},
    {DType::kUInt8, 1, "uint8", "U8", "ByteStorage", "Byte"},
    {DType::kBool, 1, "bool", "BOOL", "BoolStorage", "Bool"},
    {DType::kComplex64, 8, "complex64", "C64", "ComplexFloatStorage", "ComplexFloat"},
    {DType::kComplex128, 16, "complex128", "C128", "ComplexDoubleStorage", "ComplexDouble"},
    {DType::kUInt16, 2, "uint16", "U16", "", "UInt16"},
    {DType::kUInt32, 4, "uint32", "U32", "", "UInt32"},
    {DType::kUInt64, 8, "uint64", "U64", "", "UInt64"},
    {DType::kFloat8E4M3, 1, "float8_e4m3fn", "F8_E4M3", "", "Float8_e4m3fn"},
    {DType::kFloat8E5M2, 1, "float8_e5m2", "F8_E5M2", "", "Float8_e5m2"},
}};

struct Alias {
  std::string_view name;
  DType dtype;
};
constexpr std::array<Alias, 8> kTorchAliases = {{
    {"float", DType::kFloat32},
    {"double", DType::kFloat64},
    {"half", DType::kFloat16},
    {"long", DType::kInt64},
    {"int", DType::kInt32},
    {"short", DType::kInt16},
    {"cfloat", DType::kComplex64},
    {"cdouble", DType::kComplex128},
}};

const DTypeInfo& info(DType dtype) {
  for (const auto& row : kTable) {
    if (row.dtype == dtype) return row;
  }
  return kTable[0];  // unreachable for valid enumerators
}

}  // namespace

std::size_t itemSize(DType dtype) {
  return info(dtype).size;
}

std::string_view torchName(DType dtype) {
  // The table holds names without prefix; keep one static string per entry.
  static const auto names = [] {
    std::array<std::string, kTable.size()> out;
    for (std::size_t i = 0; i < kTable.size(); ++i) out[i] = "torch." + std::string(kTable[i].torch);
    return out;
  }();
  for (std::size_t i = 0; i < kTable.size(); ++i) {
    if (kTable[i].dtype == dtype) return names[i];
  }
  return names[0];
}

std::string_view safetensorsName(DType dtype) {
  return info(dtype).safetensors;
}

std::optional<DType> dtypeFromTorchName(std::string_view name) {
  if (name.starts_with("torch.")) name.remove_prefix(6);
  for (const auto& row : kTable) {
    if (row.torch == name) return row.dtype;
  }
  for (const auto& alias : kTorchAliases) {
    if (alias.name == name) return alias.dtype;
  }
  return std::nullopt;
}

std::optional<DType> dtypeFromStorageClass(std::string_view className) {
  if (className.empty()) return std::nullopt;
  for (const auto& row : kTable) {
    if (row.storageClass == className) return row.dtype;
  }
  return std::nullopt;
}

std::string_view c10Name(DType dtype) {
  return info(dtype).c10;
}

std::optional<DType> dtypeFromC10Name(std::string_view name) {
  for (const auto& row : kTable) {
    if (row.c10 == name) return row.dtype;
  }
  return std::nullopt;
}

std::optional<DType> dtypeFromSafetensorsName(std::string_view name) {
  for (const auto& row : kTable) {
    if (row.safetensors == name) return row.dtype;
  }
  return std::nullopt;
}

}  // namespace fs::tensorfile
