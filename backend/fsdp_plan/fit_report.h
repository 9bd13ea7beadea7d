// Presenting a fit (fit.h): the text `flamingo-train plan --fit` prints and
// its JSON (`fs.fit/1`, docs/planner.md "Fit to a cluster").
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "backend/fsdp_plan/fit.h"

namespace fs::fsdp_plan {

inline constexpr const char* kFitJsonSchema = "fs.fit/1";

// The cluster, the top `top` choices with their reasons, then every misfit (at most `top`).
std::string formatFit(const FitResult& fit, size_t top);
nlohmann::json fitToJson(const FitResult& fit, const protocol::RunConfig& config);

}  // namespace fs::fsdp_plan
