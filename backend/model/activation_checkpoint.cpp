#include "backend/model/activation_checkpoint.h"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <mutex>
#include <optional>

#include "backend/model/unit_hooks.h"

namespace fs::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// RNG state of one default generator, captured at forward time.
struct RngSnapshot {
  c10::Device device{c10::kCPU};
  torch::Tensor state;

  static RngSnapshot take(c10::Device device) {
    auto gen = at::globalContext().defaultGenerator(device);
    std::lock_guard<std::mutex> lock(gen.mutex());
    return {device, gen.get_state()};
  }
  // Sets this state; returns the state it replaced.
  torch::Tensor swapIn() const {
    auto gen = at::globalContext().defaultGenerator(device);
    std::lock_guard<std::mutex> lock(gen.mutex());
    auto previous = gen.get_state();
    gen.set_state(state);
    return previous;
  }
  void restore(const torch::Tensor& previous) const {
    auto gen = at::globalContext().defaultGenerator(device);
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(previous);
  }
};

struct AutocastState {
  bool cpu = false;
  bool gpu = false;
  c10::ScalarType cpu_dtype = c10::kBFloat16;
  c10::ScalarType gpu_dtype = c10::kHalf;
  bool cache = true;

  static AutocastState current() {
    return {at::autocast::is_autocast_enabled(c10::DeviceType::CPU),
            at::autocast::is_autocast_enabled(c10::DeviceType::CUDA),
            at::autocast::get_autocast_dtype(c10::DeviceType::CPU),
            at::autocast::get_autocast_dtype(c10::DeviceType::CUDA),
            at::autocast::is_autocast_cache_enabled()};
  }
  void apply() const {
    at::autocast::set_autocast_enabled(c10::DeviceType::CPU, cpu);
    at::autocast::set_autocast_enabled(c10::DeviceType::CUDA, gpu);
    at::autocast::set_autocast_dtype(c10::DeviceType::CPU, cpu_dtype);
    at::autocast::set_autocast_dtype(c10::DeviceType::CUDA, gpu_dtype);
    at::autocast::set_autocast_cache_enabled(cache);
  }
};

// Runs fn with the autocast weight-cast cache off, restoring it after. The
// cache keys casts by weight (fp32 leaves): a cast made under no-grad (our
// forward) has no grad_fn, and a recomputation reusing it would cut the
// weight's gradient. Each weight is used once per block, so nothing is lost.
template <class Fn>
torch::Tensor withoutAutocastCache(Fn&& fn) {
  const bool cache = at::autocast::is_autocast_cache_enabled();
  at::autocast::set_autocast_cache_enabled(false);
  try {
    auto out = fn();
    at::autocast::set_autocast_cache_enabled(cache);
    return out;
  } catch (...) {
    at::autocast::set_autocast_cache_enabled(cache);
    throw;
  }
}

// What backward needs besides the saved inputs; lives in the autograd context.
struct CheckpointState : torch::CustomClassHolder {
  CheckpointBody body;
  size_t num_inputs = 0;
  std::vector<torch::Tensor> params;
  std::vector<RngSnapshot> rng;
  AutocastState autocast;
};

struct CheckpointFunction : public torch::autograd::Function<CheckpointFunction> {
  // tensors = inputs..., params... (a TensorList: autograd counts each element
  // as an input, whereas a std::vector would count as one non-tensor argument).
  static variable_list forward(AutogradContext* ctx, c10::intrusive_ptr<CheckpointState> state,
                               at::TensorList tensors) {
    std::vector<torch::Tensor> inputs(tensors.begin(),
                                      tensors.begin() + static_cast<long>(state->num_inputs));
    state->rng.push_back(RngSnapshot::take(c10::Device(c10::kCPU)));
    for (const auto& t : inputs) {
      if (t.device().is_cuda()) {  // the devices with a generator of their own (meta has none)
        state->rng.push_back(RngSnapshot::take(t.device()));
        break;
      }
    }
    state->autocast = AutocastState::current();
    // Grad mode is off inside Function::forward.
    torch::Tensor out = withoutAutocastCache([&] { return state->body(inputs); });
    ctx->save_for_backward(inputs);
    ctx->saved_data["state"] = c10::IValue::make_capsule(std::move(state));
    return {out};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto holder = ctx->saved_data["state"].toCapsule();
    auto* state = static_cast<CheckpointState*>(holder.get());
    const auto saved = ctx->get_saved_variables();
    variable_list result(1 + state->num_inputs + state->params.size());  // slot 0: the state argument
    if (!grad_outputs.at(0).defined()) return result;

    std::vector<torch::Tensor> inputs;
    std::vector<torch::Tensor> wrt;
    std::vector<size_t> wrt_slot;
    for (size_t i = 0; i < saved.size(); ++i) {
      auto t = saved[i].detach();
      if (saved[i].requires_grad()) {
        t.requires_grad_(true);
        wrt.push_back(t);
        wrt_slot.push_back(1 + i);
      }
      inputs.push_back(t);
    }
    for (size_t p = 0; p < state->params.size(); ++p) {
      wrt.push_back(state->params[p]);
      wrt_slot.push_back(1 + state->num_inputs + p);
    }

    // Re-run with the forward's RNG and autocast state, then put ours back.
    torch::Tensor out;
    {
      std::vector<torch::Tensor> previous_rng;
      for (const auto& snap : state->rng) previous_rng.push_back(snap.swapIn());
      const auto previous_autocast = AutocastState::current();
      state->autocast.apply();
      try {
        torch::AutoGradMode enable_grad(true);
        out = withoutAutocastCache([&] { return state->body(inputs); });
      } catch (...) {
        previous_autocast.apply();
        for (size_t i = 0; i < state->rng.size(); ++i) state->rng[i].restore(previous_rng[i]);
        throw;
      }
      previous_autocast.apply();
      for (size_t i = 0; i < state->rng.size(); ++i) state->rng[i].restore(previous_rng[i]);
    }
    if (!out.requires_grad() || wrt.empty()) return result;
    variable_list grads;
    {
      RecomputeGradientsScope scope;
      grads = torch::autograd::grad({out}, wrt, {grad_outputs[0]}, /*retain_graph=*/false,
                                    /*create_graph=*/false, /*allow_unused=*/true);
    }
    for (size_t j = 0; j < grads.size(); ++j) result[wrt_slot[j]] = grads[j];
    return result;
  }
};

}  // namespace

torch::Tensor checkpointed(const CheckpointBody& body, const std::vector<torch::Tensor>& inputs,
                           const std::vector<torch::Tensor>& params) {
  bool needs_grad = false;
  for (const auto& t : inputs) needs_grad = needs_grad || t.requires_grad();
  for (const auto& p : params) needs_grad = needs_grad || p.requires_grad();
  if (!torch::GradMode::is_enabled() || !needs_grad) return body(inputs);

  auto state = c10::make_intrusive<CheckpointState>();
  state->body = body;
  state->num_inputs = inputs.size();
  state->params = params;
  variable_list tensors(inputs.begin(), inputs.end());
  tensors.insert(tensors.end(), params.begin(), params.end());
  return CheckpointFunction::apply(std::move(state), at::TensorList(tensors))[0];
}

std::vector<torch::Tensor> trainableParameters(const torch::nn::Module& module) {
  std::vector<torch::Tensor> out;
  for (const auto& p : module.parameters(/*recurse=*/true)) {
    if (p.requires_grad()) out.push_back(p);
  }
  return out;
}

}  // namespace fs::model
