// UnitTimer: per-unit forward and backward wall time for bench_train_step
// --units, through the model's unit hooks (NOTE [Unit hooks]). Forward: from
// before() to after() (a unit's time includes the units nested in it: the
// tower includes its blocks). Backward: a hook on each unit's output marks
// when autograd reaches the unit; on one thread the backward runs unit after
// unit, so a unit's backward lasts until the next mark (or the end of
// backward). Owned by the bench's main(); called on its thread only.
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "backend/model/unit_hooks.h"

namespace fs::bench {

class UnitTimer : public model::UnitHooks {
 public:
  using Clock = std::chrono::steady_clock;

  // names: module -> dotted path, from the model's named_modules().
  explicit UnitTimer(std::map<const torch::nn::Module*, std::string> names) : names_(std::move(names)) {}

  void before(torch::nn::Module& module, const at::Tensor&) override { started_.push_back(Clock::now()); }

  void after(torch::nn::Module& module, const at::Tensor& output) override {
    const auto t = Clock::now();
    const std::string& name = nameOf(module);
    forward_[name] += seconds(started_.back(), t);
    started_.pop_back();
    if (output.defined() && output.requires_grad()) {
      auto* self = this;
      output.register_hook([self, name](const at::Tensor&) { self->marks_.push_back({name, Clock::now()}); });
    }
  }

  // Call when a backward() returns: closes the last unit's backward.
  void backwardDone() {
    const auto end = Clock::now();
    for (size_t i = 0; i < marks_.size(); ++i) {
      const auto until = i + 1 < marks_.size() ? marks_[i + 1].second : end;
      backward_[marks_[i].first] += seconds(marks_[i].second, until);
    }
    marks_.clear();
  }

  // Call at the end of each timed step: keeps the step's sums, then resets.
  void stepDone() {
    for (const auto& [name, s] : forward_) forwardSteps_[name].push_back(s);
    for (const auto& [name, s] : backward_) backwardSteps_[name].push_back(s);
    forward_.clear();
    backward_.clear();
  }
  // Call at the end of an untimed step.
  void discardStep() {
    forward_.clear();
    backward_.clear();
    marks_.clear();
  }

  // name, median forward ms, median backward ms per step, in forward order of first appearance.
  void print(std::FILE* out) const {
    std::fprintf(out, "units (median ms per step; a unit includes those nested in it):\n");
    std::fprintf(out, "  %-52s %10s %10s\n", "unit", "forward", "backward");
    for (const auto& name : order_) {
      std::fprintf(out, "  %-52s %10.3f %10.3f\n", name.c_str(), median(forwardSteps_, name),
                   median(backwardSteps_, name));
    }
  }

 private:
  static double seconds(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  }
  static double median(const std::map<std::string, std::vector<double>>& m, const std::string& name) {
    auto it = m.find(name);
    if (it == m.end() || it->second.empty()) return 0;
    auto v = it->second;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return 1e3 * (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
  }
  const std::string& nameOf(torch::nn::Module& module) {
    auto it = names_.find(&module);
    const std::string name = it == names_.end() ? module.name() : it->second;
    auto [pos, inserted] = known_.insert(name);
    if (inserted) order_.push_back(name);
    return *pos;
  }

  std::map<const torch::nn::Module*, std::string> names_;
  std::set<std::string> known_;
  std::vector<std::string> order_;
  std::vector<Clock::time_point> started_;
  std::vector<std::pair<std::string, Clock::time_point>> marks_;
  std::map<std::string, double> forward_, backward_;
  std::map<std::string, std::vector<double>> forwardSteps_, backwardSteps_;
};

}  // namespace fs::bench
