// Measurement files and calibrated profiles (see load_measurements.hpp).
//
//   { "schema": "ptsim-measurements/1",
//     "device": { "kind": "gpu", "name": "NVIDIA H200", "sm_count": 132, … },
//     "date": "2026-11-30T12:00:00Z",
//     "method": { … },
//     "kernels": [ { "op": "gemm", "dtype": "bf16", "shape": { "m": 8192, … },
//                    "time_s": …, "min_s": …, "max_s": …, "flops": …, "bytes": …,
//                    "verified": true }, … ] }
#include "ptsim/config/load_measurements.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "internal/calibration_json.hpp"
#include "internal/object_reader.hpp"
#include "ptsim/common/error.hpp"

namespace ptsim::config {

namespace {

const std::set<std::string> kOps = {"gemm",      "attention",  "copy",       "elementwise", "norm",
                                    "softmax",   "optimizer",  "embedding",  "memcpy_h2d",  "memcpy_d2h",
                                    "all_reduce", "all_gather", "reduce_scatter"};

hardware::KernelMeasurement parse_kernel(const nlohmann::json& j, const std::string& where,
                                         std::size_t index) {
  internal::ObjectReader in(j, where, fmt::format("/kernels/{}", index));
  hardware::KernelMeasurement k;
  k.op = in.string("op");
  if (!kOps.contains(k.op))
    in.fail("op", fmt::format("is not an operation ptsim knows; use one of {}", fmt::join(kOps, ", ")));
  // The block-scaled formats too: published tables of MXFP8 and NVFP4 GEMMs
  // are checked at the profile's rate of that format.
  k.dtype = in.optional_choice("dtype", {"bf16", "fp16", "tf32", "fp32", "fp8", "mxfp8", "nvfp4"}).value_or("bf16");
  if (!j.contains("shape")) in.fail("shape", "is missing; every measurement names its kernel's shape");
  const nlohmann::json& shape = j.at("shape");
  internal::ObjectReader shape_in(shape, where, fmt::format("/kernels/{}/shape", index));
  for (const auto& [name, value] : shape.items()) k.shape[name] = shape_in.number(name, 0, 1e18);
  in.skip("shape");
  k.time_s = in.number("time_s", 1e-12, 1e6);
  k.min_s = in.number("min_s", 0, 1e6);
  k.max_s = in.number("max_s", 0, 1e6);
  if (!(k.min_s <= k.time_s && k.time_s <= k.max_s))
    in.fail("time_s", fmt::format("must lie between min_s = {} and max_s = {}", k.min_s, k.max_s));
  k.flops = in.number("flops", 0, 1e30);
  k.bytes = in.number("bytes", 0, 1e30);
  k.verified = in.boolean("verified");
  const auto need = [&](std::initializer_list<const char*> names) {
    for (const char* n : names)
      if (!k.shape.contains(n))
        shape_in.fail(n, fmt::format("is missing; a {} measurement names its {}", k.op, n));
  };
  if (k.op == "gemm") need({"m", "n", "k", "batch"});
  if (k.op == "attention") need({"batch_heads", "seq_q", "seq_kv", "head_dim", "causal", "backward"});
  if (k.op == "all_reduce" || k.op == "all_gather" || k.op == "reduce_scatter") need({"ranks"});
  in.reject_unknown_keys("accepted keys: op, dtype, shape, time_s, min_s, max_s, flops, bytes, verified");
  return k;
}

}  // namespace

hardware::MeasurementSet load_measurements(const std::string& path, InputFiles& inputs) {
  const nlohmann::json j = internal::read_json_file(path, inputs);
  internal::ObjectReader in(j, path);
  const std::string schema = in.string("schema");
  if (schema != "ptsim-measurements/1")
    in.fail("schema", "is not a measurement schema this ptsim reads; expected \"ptsim-measurements/1\"");
  hardware::MeasurementSet m;
  m.file = path;
  internal::ObjectReader device = in.object("device");
  m.kind = device.choice("kind", {"gpu", "cpu"});
  m.device = device.string("name");
  for (const auto& [key, value] : j.at("device").items())
    if (key != "kind" && key != "name") m.environment[key] = value.is_string() ? value.get<std::string>() : value.dump();
  m.date = in.string("date");
  // The method's other keys describe the run for people; the sustained
  // load changes what the times mean (hardware/measurement_set.hpp).
  if (in.has("method")) m.sustain_s = in.object("method").optional_number("sustain_s", 0, 3600).value_or(0);
  const nlohmann::json& kernels = in.array("kernels");
  if (kernels.empty()) in.fail("kernels", "is empty; a measurement file holds at least one kernel");
  for (std::size_t i = 0; i < kernels.size(); ++i) m.kernels.push_back(parse_kernel(kernels[i], path, i));
  in.reject_unknown_keys("accepted keys: schema, device, date, method, kernels");
  return m;
}

std::string calibrated_profile_json(const std::string& profile_path, InputFiles& inputs,
                                    const hardware::Calibration& calibration) {
  nlohmann::ordered_json out = internal::read_ordered_json_file(profile_path, inputs);
  out.erase("calibration");
  out["calibration"] = internal::calibration_to_json(calibration);
  return out.dump(2) + "\n";
}

}  // namespace ptsim::config
