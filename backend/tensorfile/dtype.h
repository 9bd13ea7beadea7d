// Element types of tensor files, and their names in torch, c10 and safetensors.
//
// One enum for both formats so callers compare a torch.save tensor with a
// safetensors one directly. Thread-safety: plain functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace fs::tensorfile {

enum class DType {
  kFloat64,
  kFloat32,
  kFloat16,
  kBFloat16,
  kInt64,
  kInt32,
  kInt16,
  kInt8,
  kUInt8,
  kBool,
  kComplex64,
  kComplex128,
  kUInt16,
  kUInt32,
  kUInt64,
  kFloat8E4M3,
  kFloat8E5M2,
};

// Bytes per element (1 for bool and the float8 types).
std::size_t itemSize(DType dtype);
// "torch.float32", "torch.bfloat16", ... (str(torch.float32) in Python).
std::string_view torchName(DType dtype);
// "F32", "BF16", "BOOL", ... (safetensors header names).
std::string_view safetensorsName(DType dtype);

// "torch.float32" or "float32" -> kFloat32; also the aliases torch defines
// ("float", "half", "double", "long", "int", "short", "cfloat", "cdouble").
std::optional<DType> dtypeFromTorchName(std::string_view name);
// "FloatStorage" -> kFloat32 ... (the legacy typed storage classes, without module).
std::optional<DType> dtypeFromStorageClass(std::string_view className);
// "F32" -> kFloat32 ...
std::optional<DType> dtypeFromSafetensorsName(std::string_view name);
// "Float", "BFloat16", "Long", ... (c10::toString of the ScalarType, as a sharded checkpoint's index.json
// spells it) and back. tests/backend/checkpoint/weights_test.cpp holds the column to LibTorch's.
std::string_view c10Name(DType dtype);
std::optional<DType> dtypeFromC10Name(std::string_view name);

}  // namespace fs::tensorfile
