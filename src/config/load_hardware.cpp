// Hardware profile loading and its source check (see load_hardware.hpp).
#include "ptsim/config/load_hardware.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <set>
#include <string_view>

#include "internal/calibration_json.hpp"
#include "internal/fit_json.hpp"
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
      if (pointer.empty() && (key == "sources" || key == "calibration" || key == "fit")) {
        continue;  // a calibration names its measurement file instead, a fit its runs or logs
      } else {
        numeric_leaves(child, pointer + "/" + key, out);
      }
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
  // A source keyed by a list of numbers covers each of them.
  const auto covers = [](const std::string& source, const std::string& figure) {
    if (figure == source) return true;
    if (figure.size() <= source.size() + 1 || !figure.starts_with(source) || figure[source.size()] != '/')
      return false;
    const std::string_view index = std::string_view(figure).substr(source.size() + 1);
    return std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  std::map<std::string, std::string> out;
  for (const auto& [pointer, text] : sources.items()) {
    if (!text.is_string() || text.get<std::string>().empty())
      throw ConfigError(fmt::format("{}: /sources/{} must be a non-empty string naming where "
                                    "the figure comes from", where, pointer));
    // A named copy: clang before 16 cannot capture a structured binding.
    const std::string& source = pointer;
    if (std::none_of(figures.begin(), figures.end(), [&](const auto& f) { return covers(source, f); }))
      throw ConfigError(fmt::format("{}: /sources names \"{}\", which is neither a numeric figure of "
                                    "this profile nor a list of them; remove it or fix the pointer",
                                    where, pointer));
    out[pointer] = text.get<std::string>();
  }
  for (const auto& figure : figures)
    if (std::none_of(out.begin(), out.end(), [&](const auto& s) { return covers(s.first, figure); }))
      throw ConfigError(fmt::format("{}: {} has no source; add \"{}\": \"<datasheet, "
                                    "measurement file or paper>\" to /sources (a list's pointer covers "
                                    "its numbers)",
                                    where, figure, figure));
  return out;
}

// Sequence lengths of attention benchmarks run from 128 to about 1M tokens,
// and windows are shorter; factors of a kernel against its own 16k figure
// stay well inside (0, 4].
constexpr double kMaxAttentionSeq = 1 << 24;
constexpr double kMaxAttentionFactor = 4;

// An attention table: strictly ascending lengths under `axis` (returned as
// log2) and, under each of `columns`, one number in [1e-3, max] per length.
struct AttentionTable {
  std::vector<double> log2_axis;
  std::vector<std::vector<double>> columns;
};
AttentionTable parse_attention_table(ObjectReader& in, const char* axis, const char* what,
                                     std::initializer_list<const char*> columns, double max) {
  AttentionTable t;
  const std::vector<double> lengths = in.numbers(axis, 1, kMaxAttentionSeq);
  for (std::size_t i = 1; i < lengths.size(); ++i)
    if (!(lengths[i - 1] < lengths[i]))
      in.fail(fmt::format("{}/{}", axis, i), fmt::format("does not exceed the {0} before it; {0}s are strictly "
                                                         "ascending",
                                                         what));
  for (const double l : lengths) t.log2_axis.push_back(std::log2(l));
  for (const char* key : columns) {
    t.columns.push_back(in.numbers(key, 1e-3, max));
    if (t.columns.back().size() != lengths.size())
      in.fail(key, fmt::format("needs one figure per {} ({})", what, lengths.size()));
  }
  return t;
}

hardware::AttentionSequenceTable parse_attention_pass(ObjectReader in) {
  AttentionTable t = parse_attention_table(in, "seq_lengths", "length", {"full", "causal"}, kMaxAttentionFactor);
  in.reject_unknown_keys("accepted keys: seq_lengths, full, causal");
  return {std::move(t.log2_axis), std::move(t.columns[0]), std::move(t.columns[1])};
}

hardware::AttentionSequenceFactors parse_attention_kernel(ObjectReader in) {
  hardware::AttentionSequenceFactors f{parse_attention_pass(in.object("forward")),
                                       parse_attention_pass(in.object("backward"))};
  in.reject_unknown_keys("accepted keys: forward, backward");
  return f;
}

// Efficiencies under windows of `windows` keys per query: fractions of the peak.
hardware::SlidingWindowAttention parse_sliding_window(ObjectReader in) {
  AttentionTable t = parse_attention_table(in, "windows", "window", {"forward", "backward"}, 1.0);
  in.reject_unknown_keys("accepted keys: windows, forward, backward");
  return {std::move(t.log2_axis), std::move(t.columns[0]), std::move(t.columns[1])};
}

// A fraction per dtype (gemm_efficiency, sustained.tensor): each in [min, 1],
// only for dtypes with a peak, bf16's required (the others default to it).
std::array<std::optional<double>, kNumDtypes> dtype_fractions(ObjectReader in, const hardware::GpuSpec& gpu,
                                                              double min, const char* what) {
  std::array<std::optional<double>, kNumDtypes> out{};
  for (int i = 0; i < kNumDtypes; ++i) {
    const auto d = static_cast<Dtype>(i);
    out[static_cast<std::size_t>(i)] = in.optional_number(std::string(to_string(d)), min, 1.0);
    if (out[static_cast<std::size_t>(i)] && !gpu.peak_flops_per_s[static_cast<std::size_t>(i)])
      in.fail(std::string(to_string(d)), "is given for a dtype with no peak_tflops; add the peak or remove it");
  }
  if (!out[static_cast<std::size_t>(Dtype::Bf16)])
    in.fail("bf16", fmt::format("is missing; the bf16 {} is required (other dtypes default to it)", what));
  in.reject_unknown_keys("accepted dtypes: bf16, fp16, tf32, fp32, fp8, mxfp8, nvfp4");
  return out;
}

// Calls f(profile key, kernel) for each attention kernel besides the default
// flash one.
template <typename F>
void for_each_named_kernel(hardware::GpuSpec& gpu, F f) {
  f("cudnn", gpu.cudnn_attention);
  f("flash2", gpu.flash2_attention);
  f("triton", gpu.triton_attention);
  f("fp8", gpu.fp8_attention);
  f("mxfp8", gpu.mxfp8_attention);
  f("sparse_mla", gpu.sparse_mla_attention);
}

// attention_efficiency.by_head_dim: per query/key head dim ("192"), the
// measurement's value head dim and, for each kernel measured at that shape,
// by-length tables that replace the kernel's by_sequence ones for tasks of
// the shape (factors on the same efficiency, so the kernel needs both).
void parse_head_shapes(ObjectReader in, hardware::GpuSpec& gpu) {
  for (const std::string& key : in.keys()) {
    const bool digits = !key.empty() && key.size() <= 4 &&
                        std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
    const int head_dim = digits ? std::stoi(key) : 0;
    if (head_dim < 8 || head_dim > 1024)
      in.fail(key,
              "is not a head dim: by_head_dim's keys are the query/key head dims of the measurements, "
              "whole numbers from 8 to 1024 written as strings (\"192\")");
    ObjectReader shape = in.object(key);
    const int value_head_dim = static_cast<int>(shape.integer("value_head_dim", 8, 1024));
    bool any = false;
    const auto kernel_tables = [&](const std::string& name, bool has_by_sequence, hardware::AttentionHeadShapes& to) {
      if (!shape.has(name)) return;
      any = true;
      if (!has_by_sequence)
        shape.fail(name, fmt::format("needs by_sequence.{} (the kernel's tables at its own shape), on whose "
                                     "efficiency these factors stand; add it first",
                                     name));
      to[head_dim] = {value_head_dim, parse_attention_kernel(shape.object(name))};
    };
    kernel_tables("flash", gpu.flash_attention_by_sequence.has_value(), gpu.flash_attention_by_head_dim);
    for_each_named_kernel(gpu, [&](const std::string& name, std::optional<hardware::AttentionKernel>& k) {
      if (shape.has(name) && !k)
        shape.fail(name, fmt::format("has no {0}_forward and {0}_backward efficiencies; add them first", name));
      if (k) kernel_tables(name, k->by_sequence.has_value(), k->by_head_dim);
    });
    shape.reject_unknown_keys("accepted keys: value_head_dim, flash, cudnn, flash2, triton, fp8, mxfp8");
    if (!any)
      in.fail(key, "names no kernel; give the tables of at least one (flash, cudnn, flash2, triton, fp8, mxfp8)");
  }
}

// Fractions of burst throughput: above 1 a step would outrun the benchmark
// that set the burst rate; below 0.05 no GPU trains.
constexpr double kMinSustained = 0.05;

hardware::SustainedRates parse_sustained(ObjectReader in, const hardware::GpuSpec& gpu) {
  hardware::SustainedRates r;
  r.tensor = dtype_fractions(in.object("tensor"), gpu, kMinSustained, "sustained fraction");
  r.memory = in.number("memory", kMinSustained, 1.0);
  r.board_power_w = in.optional_number("board_power_W", 1.0, 1e5);
  r.max_power_w = in.optional_number("max_power_W", 1.0, 1e5);
  if (r.max_power_w && (!r.board_power_w || *r.max_power_w < *r.board_power_w))
    in.fail("max_power_W", "needs board_power_W at most its value: the part's highest limit, above the one it runs at");
  r.boost_clock_mhz = in.optional_number("boost_clock_MHz", 1.0, 1e5);
  r.sustained_clock_mhz = in.optional_number("sustained_clock_MHz", 1.0, 1e5);
  if (r.boost_clock_mhz && r.sustained_clock_mhz && *r.sustained_clock_mhz > *r.boost_clock_mhz)
    in.fail("sustained_clock_MHz", fmt::format("= {} exceeds boost_clock_MHz = {}; a clock under sustained load "
                                               "is at most the boost clock",
                                               *r.sustained_clock_mhz, *r.boost_clock_mhz));
  in.reject_unknown_keys(
      "accepted keys: tensor, memory, board_power_W, max_power_W, boost_clock_MHz, sustained_clock_MHz");
  return r;
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
  peaks.reject_unknown_keys("accepted dtypes: bf16, fp16, tf32, fp32, fp8, mxfp8, nvfp4");
  gpu.memory_bytes = in.number("memory_GiB", 1e-3, 1e6) * units::kGiB;
  gpu.memory_bandwidth_bytes_per_s = in.number("memory_bandwidth_GBps", 1e-3, 1e7) * units::kGB;
  gpu.sm_count = static_cast<int>(in.integer("sm_count", 1, 100'000));
  gpu.gemm_efficiency = dtype_fractions(in.object("gemm_efficiency"), gpu, 0.01, "GEMM efficiency");
  gpu.memory_efficiency = in.number("memory_efficiency", 0.01, 1.0);
  ObjectReader attention = in.object("attention_efficiency");
  gpu.attention_forward_efficiency = attention.number("forward", 0.01, 1.0);
  gpu.attention_backward_efficiency = attention.number("backward", 0.01, 1.0);
  // Kernels other than the default flash one, each with both passes or neither.
  const auto kernel = [&attention](const std::string& name, const char* what) {
    const auto forward = attention.optional_number(name + "_forward", 0.01, 1.0);
    const auto backward = attention.optional_number(name + "_backward", 0.01, 1.0);
    if (forward.has_value() != backward.has_value())
      attention.fail(name + (forward ? "_backward" : "_forward"),
                     fmt::format("is missing; {} needs both its forward and backward efficiency", what));
    return forward ? std::optional(hardware::AttentionKernel{*forward, *backward, {}, {}, {}}) : std::nullopt;
  };
  gpu.cudnn_attention = kernel("cudnn", "cuDNN's attention");
  gpu.flash2_attention = kernel("flash2", "FlashAttention-2");
  gpu.triton_attention = kernel("triton", "FlashAttention's Triton kernel");
  gpu.fp8_attention = kernel("fp8", "FP8 attention");
  gpu.mxfp8_attention = kernel("mxfp8", "MXFP8 attention");
  gpu.sparse_mla_attention = kernel("sparse_mla", "token-level sparse attention");
  if (gpu.fp8_attention && !gpu.peak_flops_per_s[static_cast<std::size_t>(Dtype::Fp8)])
    attention.fail("fp8_forward", "is given for a GPU with no fp8 peak_tflops, of which it is a fraction");
  if (gpu.mxfp8_attention && !gpu.peak_flops_per_s[static_cast<std::size_t>(Dtype::Mxfp8)])
    attention.fail("mxfp8_forward", "is given for a GPU with no mxfp8 peak_tflops, of which it is a fraction");
  if (attention.has("by_sequence")) {
    ObjectReader by_sequence = attention.object("by_sequence");
    if (by_sequence.has("flash")) gpu.flash_attention_by_sequence = parse_attention_kernel(by_sequence.object("flash"));
    for_each_named_kernel(gpu, [&by_sequence](const std::string& name, std::optional<hardware::AttentionKernel>& k) {
      if (!by_sequence.has(name)) return;
      if (!k)
        by_sequence.fail(name, fmt::format("has no {0}_forward and {0}_backward efficiencies to scale; add them first",
                                           name));
      k->by_sequence = parse_attention_kernel(by_sequence.object(name));
    });
    by_sequence.reject_unknown_keys("accepted keys: flash, cudnn, flash2, triton, fp8, mxfp8");
  }
  if (attention.has("sliding_window")) {
    // Above its largest window a kernel's causal table takes over.
    ObjectReader windows = attention.object("sliding_window");
    const auto table = [&windows](const std::string& name, bool has_by_sequence) {
      if (!has_by_sequence)
        windows.fail(name, fmt::format("needs by_sequence.{} (the kernel's causal figures by length), which "
                                       "prices windows above the measured ones; add it first",
                                       name));
      return parse_sliding_window(windows.object(name));
    };
    if (windows.has("flash"))
      gpu.sliding_window_attention = table("flash", gpu.flash_attention_by_sequence.has_value());
    const auto kernel_windows = [&](const std::string& name, std::optional<hardware::AttentionKernel>& k) {
      if (!windows.has(name)) return;
      if (!k) windows.fail(name, fmt::format("has no {0}_forward and {0}_backward efficiencies; add them first", name));
      k->sliding_window = table(name, k->by_sequence.has_value());
    };
    kernel_windows("fp8", gpu.fp8_attention);
    kernel_windows("mxfp8", gpu.mxfp8_attention);
    windows.reject_unknown_keys("accepted keys: flash, fp8, mxfp8");
  }
  if (attention.has("by_head_dim")) parse_head_shapes(attention.object("by_head_dim"), gpu);
  attention.reject_unknown_keys(
      "accepted keys: forward, backward, cudnn_forward, cudnn_backward, flash2_forward, flash2_backward, "
      "triton_forward, triton_backward, fp8_forward, fp8_backward, mxfp8_forward, mxfp8_backward, by_sequence, "
      "sliding_window, by_head_dim");
  gpu.kernel_launch_overhead_s = in.number("kernel_launch_overhead_us", 0.0, 1e4) * 1e-6;
  gpu.comm_compute_slowdown = in.number("comm_compute_slowdown", 0.0, 10.0);
  if (in.has("sustained")) gpu.sustained = parse_sustained(in.object("sustained"), gpu);
  gpu.compute_capability = in.optional_number("compute_capability", 1.0, 99.0);
  if (const auto link = in.optional_number("host_link_GBps", 1e-3, 1e5)) gpu.host_link_bytes_per_s = *link * units::kGB;
  in.reject_unknown_keys(
      "accepted keys: name, peak_tflops, memory_GiB, memory_bandwidth_GBps, sm_count, "
      "gemm_efficiency, memory_efficiency, attention_efficiency, kernel_launch_overhead_us, "
      "comm_compute_slowdown, sustained, compute_capability, host_link_GBps");
  return gpu;
}

// A measured exchange table: member counts (the key `counts_key`: EP
// ranks of one NVLink domain, or NVLink domains) ascending from 2, one rate
// of each direction a count.
hardware::ExpertExchangeTable parse_expert_exchange(ObjectReader in, const char* counts_key, const char* counted) {
  hardware::ExpertExchangeTable t;
  t.sms = static_cast<int>(in.integer("sms", 1, 1024));
  t.members = in.numbers(counts_key, 2, 1 << 20, counted);
  for (std::size_t i = 1; i < t.members.size(); ++i)
    if (!(t.members[i] > t.members[i - 1])) in.fail(counts_key, "must be in ascending order, each count once");
  const auto rates = [&](const char* key) {
    std::vector<double> r =
        in.numbers(key, 1e-3, 1e6, fmt::format("GB/s of algorithm bandwidth, one per entry of {}", counts_key));
    if (r.size() != t.members.size())
      in.fail(key, fmt::format("has {} values for {} entries of {}; give one per entry", r.size(), t.members.size(),
                               counts_key));
    for (double& v : r) v *= units::kGB;
    return r;
  };
  t.dispatch_bytes_per_s = rates("dispatch_GBps");
  t.combine_bytes_per_s = rates("combine_GBps");
  in.reject_unknown_keys(fmt::format("accepted keys: sms, {}, dispatch_GBps, combine_GBps", counts_key));
  return t;
}

hardware::NvlinkSpec parse_nvlink(ObjectReader in) {
  hardware::NvlinkSpec n;
  n.domain_gpus = in.integer("domain_gpus", 1, 1 << 20);
  n.bandwidth_bytes_per_s = in.number("bandwidth_GBps", 1e-3, 1e6) * units::kGB;
  n.latency_s = in.number("latency_us", 0.0, 1e6) * 1e-6;
  n.efficiency = in.number("efficiency", 0.01, 1.0);
  n.nvls_efficiency = in.optional_number("nvls_efficiency", 0.01, 1.0);
  if (const auto us = in.optional_number("nvls_latency_us", 0.0, 1e6)) {
    if (!n.nvls_efficiency) in.fail("nvls_latency_us", "needs nvls_efficiency: a profile without it has no NVLS");
    n.nvls_latency_s = *us * 1e-6;
  }
  constexpr const char* kRanks = "the EP ranks exchanging inside one NVLink domain";
  if (in.has("hybridep")) n.hybridep = parse_expert_exchange(in.object("hybridep"), "ranks", kRanks);
  if (in.has("deepep")) n.deepep = parse_expert_exchange(in.object("deepep"), "ranks", kRanks);
  in.reject_unknown_keys(
      "accepted keys: domain_gpus, bandwidth_GBps, latency_us, efficiency, nvls_efficiency, nvls_latency_us, "
      "hybridep, deepep");
  return n;
}

hardware::NicSpec parse_nic(ObjectReader in) {
  hardware::NicSpec n;
  n.per_gpu = static_cast<int>(in.integer("per_gpu", 1, 64));
  n.bandwidth_bytes_per_s = in.number("bandwidth_GBps", 1e-3, 1e6) * units::kGB;
  n.latency_s = in.number("latency_us", 0.0, 1e6) * 1e-6;
  n.efficiency = in.number("efficiency", 0.01, 1.0);
  if (in.has("hybridep"))
    n.hybridep = parse_expert_exchange(in.object("hybridep"), "domains",
                                       "the NVLink domains exchanging, each with the EP ranks of its NVLink domain");
  in.reject_unknown_keys("accepted keys: per_gpu, bandwidth_GBps, latency_us, efficiency, hybridep");
  return n;
}

hardware::FabricSpec parse_fabric(ObjectReader in) {
  hardware::FabricSpec f;
  f.topology = in.choice("topology", {"rail_optimized", "fat_tree"}) == "rail_optimized"
                   ? hardware::FabricTopology::RailOptimized
                   : hardware::FabricTopology::FatTree;
  f.levels = static_cast<int>(in.integer("levels", 1, 5));
  f.leaf_nodes = in.integer("leaf_nodes", 1, 1 << 24);
  f.pod_gpus = in.optional_integer("pod_gpus", 1, std::int64_t{1} << 30).value_or(0);
  f.oversubscription = in.number("oversubscription", 1.0, 1e3);
  f.switch_latency_s = in.number("switch_latency_us", 0.0, 1e3) * 1e-6;
  f.in_network_reduction = in.boolean("in_network_reduction");
  // NCCL's default (docs/userguide env.rst: NCCL_COLLNET_ENABLE, default 0).
  f.nccl_collnet_enable = in.optional_boolean("nccl_collnet_enable").value_or(false);
  if (f.nccl_collnet_enable && !f.in_network_reduction)
    in.fail("nccl_collnet_enable",
            "is true but in_network_reduction is false: NCCL's CollNet runs on switches that offer SHARP; set "
            "in_network_reduction to true or nccl_collnet_enable to false");
  if (f.pod_gpus > 0 && f.levels < 3)
    in.fail("pod_gpus", "needs levels = 3: pods are joined by a switch level above them");
  in.reject_unknown_keys("accepted keys: topology, levels, leaf_nodes, pod_gpus, oversubscription, "
                         "switch_latency_us, in_network_reduction, nccl_collnet_enable");
  return f;
}

}  // namespace

hardware::HardwareProfile parse_hardware(const nlohmann::json& object, const std::string& where) {
  ObjectReader in(object, where);
  const std::string schema = in.string("schema");
  if (schema != "ptsim-hw/2")
    in.fail("schema", "is not a schema this ptsim reads; expected \"ptsim-hw/2\" (see docs/formats.md)");
  hardware::HardwareProfile hw;
  hw.name = in.string("name");
  hw.description = in.optional_string("description").value_or("");
  hw.gpu = parse_gpu(in.object("gpu"));
  ObjectReader node = in.object("node");
  hw.gpus_per_node = static_cast<int>(node.integer("gpus_per_node", 1, 1 << 20));
  if (const auto us = node.optional_number("host_overhead_us", 0.0, 1e5)) hw.host_overhead_s = *us * 1e-6;
  node.reject_unknown_keys("accepted keys: gpus_per_node, host_overhead_us");
  ObjectReader network = in.object("network");
  hw.collective_base_latency_s = network.number("collective_base_latency_us", 0.0, 1e6) * 1e-6;
  hw.nvlink = parse_nvlink(network.object("nvlink"));
  hw.nic = parse_nic(network.object("nic"));
  hw.fabric = parse_fabric(network.object("fabric"));
  network.reject_unknown_keys("accepted keys: collective_base_latency_us, nvlink, nic, fabric");
  in.skip("sources");
  if (in.has("calibration")) hw.calibration = internal::parse_calibration(object.at("calibration"), where);
  in.skip("calibration");
  if (in.has("fit")) hw.fit = internal::parse_fit(object.at("fit"), where);
  in.skip("fit");
  in.reject_unknown_keys("accepted keys: schema, name, description, gpu, node, network, sources, calibration, fit");
  const std::int64_t domain = hw.nvlink.domain_gpus;
  if (domain % hw.gpus_per_node != 0 && hw.gpus_per_node % domain != 0)
    throw ConfigError(fmt::format("{}: /network/nvlink/domain_gpus = {} and /node/gpus_per_node = "
                                  "{}: one must divide the other (a domain is part of a node or a "
                                  "set of whole nodes)",
                                  where, domain, hw.gpus_per_node));
  if (hw.fabric.pod_gpus > 0 && hw.fabric.pod_gpus % std::max<std::int64_t>(domain, hw.gpus_per_node) != 0)
    throw ConfigError(fmt::format("{}: /network/fabric/pod_gpus = {} must hold whole NVLink domains "
                                  "and nodes (multiples of {})",
                                  where, hw.fabric.pod_gpus, std::max<std::int64_t>(domain, hw.gpus_per_node)));
  hw.sources = check_sources(object, where);
  return hw;
}

hardware::HardwareProfile load_hardware(const std::string& path, InputFiles& inputs) {
  return parse_hardware(internal::read_json_file(path, inputs), path);
}

std::string fitted_profile_json(const std::string& profile_path, InputFiles& inputs,
                                const std::vector<FittedFigure>& figures, const hardware::FitRecord& record) {
  nlohmann::ordered_json out = internal::read_ordered_json_file(profile_path, inputs);
  for (const auto& f : figures) {
    out[nlohmann::ordered_json::json_pointer(f.pointer)] = f.value;
    out["sources"][f.pointer] = f.source;
  }
  out.erase("fit");
  out["fit"] = internal::fit_to_json(record);
  parse_hardware(nlohmann::json::parse(out.dump()), profile_path + " (as fitted)");
  return out.dump(2) + "\n";
}

}  // namespace ptsim::config
