#include "backend/runtime/torch_pickle.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickler.h>

namespace fs::runtime {

// NOTE [Untagged pickles]: torch::pickle_save tags each dict and list with its
// TorchScript type (torch.jit._pickle.restore_type_tag, build_intlist, ...), for
// TorchScript's loader. Python's torch.load with weights_only=True (the default
// since 2.6) refuses those globals, so an OpenFlamingo script loading one of our
// checkpoints with plain torch.load(path) failed. The same archive without the
// tags (Pickler's tag_aggregates off) loads as plain dicts and lists, in Python
// and in torch::pickle_load (whose dicts are then Dict[Any, Any]).
std::vector<char> pickleForTorchLoad(const c10::IValue& value) {
  std::vector<char> pickled;
  torch::jit::Pickler pickler([&](const char* data, size_t size) { pickled.insert(pickled.end(), data, data + size); },
                              /*tensor_table=*/nullptr, /*type_renamer=*/nullptr,
                              /*memoized_class_types=*/nullptr, /*get_tensor_id=*/nullptr,
                              /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(value);
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
