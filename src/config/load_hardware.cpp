// Hardware profile loading and its source check (see load_hardware.hpp).
#include "ptsim/config/load_hardware.hpp"

#include <fmt/format.h>

#include <set>

#include "internal/object_reader.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/common/units.hpp"

namespace ptsim::config {

namespace {

using internal::ObjectReader;

void numeric_leaves(const nlohmann::json& v, const std::string& pointer,
                    std::set<std::string>& out) {
  if (v.is_number()) {
    out.insert(pointer);
  } else if (v.is_object()) {
    for (const auto& [key, child] : v.items())
      if (key != "sources") numeric_leaves(child, pointer + "/" + key, out);
  } else if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i)
      numeric_leaves(v[i], fmt::format("{}/{}", pointer, i), out);
  }
}

// Every figure names where it comes from; every source names a figure.
std::map<std::string, std::string> check_sources(const nlohmann::json& object,
                                                 const std::string& where) {
  ObjectReader root(object, where);
  if (!root.has("sources"))
    throw ConfigError(fmt::format("{}: /sources is missing; a profile names the source "
                                  "(datasheet, measurement file, paper) of every figure, "
                                  "keyed by JSON pointer, e.g. \"/gpu/memory_GiB\"",
                                  where));
  const nlohmann::json& sources = object.at("sources");
  if (!sources.is_object())
    throw ConfigError(fmt::format("{}: /sources must be an object of JSON pointer → source", where));
  std::set<std::string> figures;
  numeric_leaves(object, "", figures);
  std::map<std::string, std::string> out;
  for (const auto& [pointer, text] : sources.items()) {
    if (!text.is_string() || text.get<std::string>().empty())
      throw ConfigError(fmt::format("{}: /sources/{} must be a non-empty string naming where "
                                    "the figure comes from", where, pointer));
    if (!figures.contains(pointer))
      throw ConfigError(fmt::format("{}: /sources names \"{}\", which is not a numeric figure of "
                                    "this profile; remove it or fix the pointer",
                                    where, pointer));
    out[pointer] = text.get<std::string>();
  }
  for (const auto& figure : figures)
    if (!out.contains(figure))
      throw ConfigError(fmt::format("{}: {} has no source; add \"{}\": \"<datasheet, "
                                    "measurement file or paper>\" to /sources",
                                    where, figure, figure));
  return out;
}

hardware::GpuSpec parse_gpu(ObjectReader in) {
  hardware::GpuSpec gpu;
  gpu.name = in.string("name");
  ObjectReader peaks = in.object("peak_tflops");
  for (int i = 0; i < kNumDtypes; ++i) {
    const auto d = static_cast<Dtype>(i);
    if (const auto tflops = peaks.optional_number(std::string(to_string(d)), 1e-3, 1e6))
      gpu.peak_flops_per_s[static_cast<std::size_t>(i)] = *tflops * units::kTera;
  }
  if (!gpu.peak_flops_per_s[static_cast<std::size_t>(Dtype::Bf16)])
    peaks.fail("bf16", "is missing; the dense bf16 peak is required");
  peaks.reject_unknown_keys("accepted dtypes: bf16, fp16, tf32, fp32, fp8");
  gpu.memory_bytes = in.number("memory_GiB", 1e-3, 1e6) * units::kGiB;
  gpu.memory_bandwidth_bytes_per_s = in.number("memory_bandwidth_GBps", 1e-3, 1e7) * units::kGB;
  gpu.sm_count = static_cast<int>(in.integer("sm_count", 1, 100'000));
  gpu.gemm_efficiency = in.number("gemm_efficiency", 0.01, 1.0);
  gpu.memory_efficiency = in.number("memory_efficiency", 0.01, 1.0);
  gpu.kernel_launch_overhead_s = in.number("kernel_launch_overhead_us", 0.0, 1e4) * 1e-6;
  in.reject_unknown_keys(
      "accepted keys: name, peak_tflops, memory_GiB, memory_bandwidth_GBps, sm_count, "
      "gemm_efficiency, memory_efficiency, kernel_launch_overhead_us");
  return gpu;
}

std::vector<hardware::NetworkTier> parse_tiers(ObjectReader& network, const std::string& where) {
  const nlohmann::json& list = network.array("tiers");
  if (list.empty()) network.fail("tiers", "must list at least one tier (e.g. nvlink, infiniband)");
  std::vector<hardware::NetworkTier> tiers;
  for (std::size_t i = 0; i < list.size(); ++i) {
    ObjectReader in(list[i], where, fmt::format("/network/tiers/{}", i));
    hardware::NetworkTier t;
    t.name = in.string("name");
    const bool last = i + 1 == list.size();
    if (last) {
      if (in.has("domain_gpus"))
        in.fail("domain_gpus", "must be absent on the last tier, which spans the whole cluster");
    } else {
      t.domain_gpus = in.integer("domain_gpus", 1, 1 << 30);
      if (!tiers.empty() && t.domain_gpus % tiers.back().domain_gpus != 0)
        in.fail("domain_gpus", fmt::format("must be a multiple of the inner tier's domain_gpus = "
                                           "{}: tiers nest",
                                           tiers.back().domain_gpus));
    }
    t.bandwidth_bytes_per_s = in.number("bandwidth_GBps", 1e-6, 1e6) * units::kGB;
    t.latency_s = in.number("latency_us", 0.0, 1e6) * 1e-6;
    t.efficiency = in.number("efficiency", 0.01, 1.0);
    in.reject_unknown_keys("accepted keys: name, domain_gpus, bandwidth_GBps, latency_us, efficiency");
    tiers.push_back(t);
  }
  return tiers;
}

}  // namespace

hardware::HardwareProfile parse_hardware(const nlohmann::json& object, const std::string& where) {
  ObjectReader in(object, where);
  const std::string schema = in.string("schema");
  if (schema != "ptsim-hw/1")
    in.fail("schema", "is not a schema this ptsim reads; expected \"ptsim-hw/1\"");
  hardware::HardwareProfile hw;
  hw.name = in.string("name");
  hw.description = in.optional_string("description").value_or("");
  hw.gpu = parse_gpu(in.object("gpu"));
  ObjectReader node = in.object("node");
  hw.gpus_per_node = static_cast<int>(node.integer("gpus_per_node", 1, 1 << 20));
  node.reject_unknown_keys("accepted keys: gpus_per_node");
  ObjectReader network = in.object("network");
  hw.collective_base_latency_s = network.number("collective_base_latency_us", 0.0, 1e6) * 1e-6;
  hw.tiers = parse_tiers(network, where);
  network.reject_unknown_keys("accepted keys: collective_base_latency_us, tiers");
  in.skip("sources");
  in.reject_unknown_keys("accepted keys: schema, name, description, gpu, node, network, sources");
  if (hw.tiers.size() > 1 && hw.tiers.front().domain_gpus % hw.gpus_per_node != 0 &&
      hw.gpus_per_node % hw.tiers.front().domain_gpus != 0)
    throw ConfigError(fmt::format("{}: /network/tiers/0/domain_gpus = {} and /node/gpus_per_node "
                                  "= {}: one must divide the other",
                                  where, hw.tiers.front().domain_gpus, hw.gpus_per_node));
  hw.sources = check_sources(object, where);
  return hw;
}

hardware::HardwareProfile load_hardware(const std::string& path) {
  return parse_hardware(internal::read_json_file(path), path);
}

}  // namespace ptsim::config
