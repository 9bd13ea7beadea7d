#include "backend/runtime/torch_pickle.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickler.h>

namespace fs::runtime {
namespace {

// `value` with every list a generic one, inside dicts and tuples too: the Pickler writes
// int, float, bool and tensor lists through torch.jit._pickle.build_*list whatever
// tag_aggregates says.
c10::IValue plainContainers(const c10::IValue& value) {
  auto generic = [](const auto& items) {
    c10::impl::GenericList out(c10::AnyType::get());
    out.reserve(items.size());
    for (const auto& item : items) out.push_back(plainContainers(c10::IValue(item)));
    return out;
  };
  if (value.isIntList()) return generic(value.toIntVector());
  if (value.isDoubleList()) return generic(value.toDoubleVector());
  if (value.isBoolList()) {
    std::vector<bool> bools;
    for (bool b : value.toBoolList()) bools.push_back(b);
    return generic(bools);
  }
  if (value.isTensorList()) return generic(value.toTensorVector());
  if (value.isList()) return generic(value.toList().vec());
  if (value.isGenericDict()) {
    const auto dict = value.toGenericDict();
    c10::impl::GenericDict out(dict.keyType(), c10::AnyType::get());
    for (const auto& entry : dict) out.insert(entry.key(), plainContainers(entry.value()));
    return out;
  }
  if (value.isTuple()) {
    std::vector<c10::IValue> items;
    for (const auto& item : value.toTupleRef().elements()) items.push_back(plainContainers(item));
    return c10::ivalue::Tuple::create(std::move(items));
  }
  return value;
}

}  // namespace

// NOTE [Untagged pickles]: torch::pickle_save tags each dict and list with its
// TorchScript type (torch.jit._pickle.restore_type_tag, build_intlist, ...), for
// TorchScript's loader. Python's torch.load with weights_only=True (the default
// since 2.6) refuses those globals, so an OpenFlamingo script loading one of our
// checkpoints with plain torch.load(path) failed. The same archive without the
// tags (Pickler's tag_aggregates off, every list made generic first) loads as
// plain dicts and lists, in Python and in torch::pickle_load (whose containers
// are then Dict[str, Any] and List[Any]).
std::vector<char> pickleForTorchLoad(const c10::IValue& value) {
  std::vector<char> pickled;
  torch::jit::Pickler pickler(
      [&](const char* data, size_t size) { pickled.insert(pickled.end(), data, data + size); },
      /*tensor_table=*/nullptr, /*type_renamer=*/nullptr,
      /*memoized_class_types=*/nullptr, /*get_tensor_id=*/nullptr,
      /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(plainContainers(value));
  pickler.stop();

  std::vector<char> archive;
  archive.reserve(pickled.size());
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t size) {
    const char* bytes = static_cast<const char*>(data);
    archive.insert(archive.end(), bytes, bytes + size);
    return size;
  });
  torch::jit::writeArchiveAndTensors("data", pickled.data(), pickled.size(), pickler.tensorData(), writer);
  writer.writeEndOfFile();
  return archive;
}

}  // namespace fs::runtime
