// Calibration tables in JSON (see internal/calibration_json.hpp).
//
//   "calibration": {
//     "measurements": "hw_profiles/measured/h200-2026-11-30.json",
//     "device": "NVIDIA H200", "date": "2026-11-30T10:00:00Z",
//     "sustain_s": 3,          (only for measurements taken under sustained load)
//     "gemm": { "bf16": { "log2_m": [...], "log2_n": [...], "log2_k": [...], "ratio": [...] } },
//     "memory": { "copy": { "log2_bytes": [...], "efficiency": [...] }, ... },
//     "kernel_launch_overhead_us": 2.1,
//     "attention_efficiency": { "forward": 0.62, "backward": 0.48 }
//   }
#include "internal/calibration_json.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "internal/object_reader.hpp"
#include "ptsim/common/error.hpp"

namespace ptsim::config::internal {

namespace {

// Sanity bounds, far outside anything measured: calibrated ratios of the
// committed profiles lie in 0.27–10.3, CPU memory efficiencies up to ~3 (L2);
// an efficiency must be positive, and 1e-6 is a million times below any.
constexpr double kMinRatio = 1e-4;
constexpr double kMaxRatio = 1e4;
constexpr double kMinMemoryEfficiency = 1e-6;
constexpr double kMaxMemoryEfficiency = 100;
constexpr double kMaxLog2Size = 64;

hardware::GemmTable parse_table(ObjectReader in) {
  hardware::GemmTable t;
  constexpr const char* kLog2Size = "the axes are log2 of a size";
  t.log2_m = in.numbers("log2_m", 0, kMaxLog2Size, kLog2Size);
  t.log2_n = in.numbers("log2_n", 0, kMaxLog2Size, kLog2Size);
  t.log2_k = in.numbers("log2_k", 0, kMaxLog2Size, kLog2Size);
  t.ratio = in.numbers("ratio", kMinRatio, kMaxRatio,
                       "a measured/modelled ratio outside means a wrong peak in the profile or a broken measurement");
  in.reject_unknown_keys("accepted keys: log2_m, log2_n, log2_k, ratio");
  const std::pair<const char*, const std::vector<double>*> axes[] = {
      {"log2_m", &t.log2_m}, {"log2_n", &t.log2_n}, {"log2_k", &t.log2_k}};
  for (const auto& [name, axis] : axes)
    for (std::size_t i = 1; i < axis->size(); ++i)
      if (!((*axis)[i - 1] < (*axis)[i]))
        in.fail(fmt::format("{}/{}", name, i), fmt::format("= {} does not exceed the value before it ({}); grid axes "
                                                          "are strictly ascending", (*axis)[i], (*axis)[i - 1]));
  const std::size_t grid = t.log2_m.size() * t.log2_n.size() * t.log2_k.size();
  if (t.ratio.size() != grid)
    in.fail("ratio", fmt::format("has {} values; the grid needs |m|·|n|·|k| = {}", t.ratio.size(), grid));
  return t;
}

}  // namespace

hardware::Calibration parse_calibration(const nlohmann::json& object, const std::string& where) {
  ObjectReader in(object, where, "/calibration");
  hardware::Calibration c;
  c.measurements = in.string("measurements");
  c.device = in.string("device");
  c.date = in.string("date");
  c.sustain_s = in.optional_number("sustain_s", 0, 3600).value_or(0);
  if (const auto fit = in.optional_choice("gemm_fit", {"grid", "scalar"}))
    c.gemm_fit = *fit == "scalar" ? hardware::GemmFit::Scalar : hardware::GemmFit::Grid;
  if (in.has("gemm")) {
    ObjectReader gemm = in.object("gemm");
    for (const auto& [dtype, table] : object.at("gemm").items()) {
      if (!parse_dtype(dtype)) gemm.fail(dtype, "is not a dtype (bf16, fp16, tf32, fp32, fp8, mxfp8, nvfp4)");
      c.gemm[dtype] = parse_table(gemm.object(dtype));
      const auto& t = c.gemm[dtype];
      if (c.gemm_fit == hardware::GemmFit::Scalar && t.ratio.size() != 1)
        gemm.fail(dtype, fmt::format("has a {}×{}×{} grid; gemm_fit \"scalar\" holds one ratio per dtype "
                                     "(one value on each axis)", t.log2_m.size(), t.log2_n.size(), t.log2_k.size()));
    }
  }
  in.skip("gemm");
  if (in.has("memory")) {
    ObjectReader mem = in.object("memory");
    for (const auto& [kernel, value] : object.at("memory").items()) {
      ObjectReader table = mem.object(kernel);
      hardware::MemoryTable t;
      t.log2_bytes = table.numbers("log2_bytes", 0, kMaxLog2Size, "log2 of a size in bytes");
      t.efficiency = table.numbers("efficiency", kMinMemoryEfficiency, kMaxMemoryEfficiency,
                                   "above 1 only for data that stays in cache");
      table.reject_unknown_keys("accepted keys: log2_bytes, efficiency");
      if (t.log2_bytes.size() != t.efficiency.size() ||
          !std::is_sorted(t.log2_bytes.begin(), t.log2_bytes.end()) ||
          std::adjacent_find(t.log2_bytes.begin(), t.log2_bytes.end()) != t.log2_bytes.end())
        table.fail("log2_bytes", "must be strictly ascending with one efficiency each");
      c.memory[kernel] = std::move(t);
    }
  }
  in.skip("memory");
  if (const auto us = in.optional_number("kernel_launch_overhead_us", 0.0, 1e4)) c.kernel_launch_overhead_s = *us * 1e-6;
  if (in.has("attention_efficiency")) {
    ObjectReader att = in.object("attention_efficiency");
    c.attention_forward_efficiency = att.optional_number("forward", 1e-4, 1.0);
    c.attention_backward_efficiency = att.optional_number("backward", 1e-4, 1.0);
    att.reject_unknown_keys("accepted keys: forward, backward");
  }
  in.skip("attention_efficiency");
  in.reject_unknown_keys("accepted keys: measurements, device, date, sustain_s, gemm_fit, gemm, memory, "
                         "kernel_launch_overhead_us, attention_efficiency");
  return c;
}

nlohmann::ordered_json calibration_to_json(const hardware::Calibration& c) {
  nlohmann::ordered_json j;
  j["measurements"] = c.measurements;
  j["device"] = c.device;
  j["date"] = c.date;
  if (c.sustain_s > 0) j["sustain_s"] = c.sustain_s;
  if (c.gemm_fit == hardware::GemmFit::Scalar) j["gemm_fit"] = "scalar";
  nlohmann::ordered_json gemm = nlohmann::ordered_json::object();
  for (const auto& [dtype, t] : c.gemm)
    gemm[dtype] = {{"log2_m", t.log2_m}, {"log2_n", t.log2_n}, {"log2_k", t.log2_k}, {"ratio", t.ratio}};
  j["gemm"] = gemm;
  nlohmann::ordered_json mem = nlohmann::ordered_json::object();
  for (const auto& [kernel, t] : c.memory) mem[kernel] = {{"log2_bytes", t.log2_bytes}, {"efficiency", t.efficiency}};
  j["memory"] = mem;
  if (c.kernel_launch_overhead_s) j["kernel_launch_overhead_us"] = *c.kernel_launch_overhead_s * 1e6;
  nlohmann::ordered_json att = nlohmann::ordered_json::object();
  if (c.attention_forward_efficiency) att["forward"] = *c.attention_forward_efficiency;
  if (c.attention_backward_efficiency) att["backward"] = *c.attention_backward_efficiency;
  if (!att.empty()) j["attention_efficiency"] = att;
  return j;
}

}  // namespace ptsim::config::internal
