// `ptsim calibrate` and `ptsim check-kernels`: fit a profile to measured
// kernel times, and hold it to the ones it was not fitted on.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fmt/ostream.h>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.hpp"
#include "parse_args.hpp"
#include "output_file.hpp"
#include "ptsim/calibrate/check.hpp"
#include "ptsim/calibrate/fit.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/config/load_hardware.hpp"
#include "ptsim/config/load_measurements.hpp"

namespace ptsim::cli {

namespace po = boost::program_options;

namespace {

constexpr const char* kCalibrateUsage = R"(Usage: ptsim calibrate --measurements FILE --hw PROFILE -o OUT [--fit-attention] [--gemm-scalar]

Fits PROFILE's compute model to the kernel times in FILE (written by
ptsim-microbench or ptsim-microbench-cpu) and writes OUT: the same profile
with a "calibration" object — GEMM tables per dtype, memory-bound kernel
efficiencies, launch overhead, attention efficiency — and the measurement
file, device and date it came from. It fits one half of the measurements
(every other GEMM grid value, every other size); ptsim check-kernels checks
the other half. Attention keeps the profile's published efficiencies (of
FlashAttention or cuDNN) unless --fit-attention is given: ptsim-microbench
times a fused-attention kernel of ptsim's own, not the one training runs.
GEMMs measured at scattered shapes rather than on a grid (the linear layers
of real models, as profilers record them) take --gemm-scalar: one ratio per
dtype, fitted on every other GEMM by size and checked on the rest.

Examples:
  ptsim calibrate --measurements hw_profiles/measured/h200-2026-11-30.json \
      --hw hw_profiles/h200-sxm-141gb.json -o h200-calibrated.json
  ptsim calibrate --measurements hw_profiles/measured/a100-vidur-linear-layers.json \
      --include-unverified --gemm-scalar --hw hw_profiles/a100-sxm4-80gb.json -o a100.json

)";

constexpr const char* kCheckUsage = R"(Usage: ptsim check-kernels --measurements FILE --hw PROFILE [--json FILE] [--max-median-error PCT] [--all]

Predicts every measured kernel with PROFILE and prints predicted against
measured time, largest error first, and the median, mean and largest
absolute error. By default only the kernels ptsim calibrate holds out are
checked (--all checks every one). Exits with 4 when the median absolute error
exceeds --max-median-error.

Example:
  ptsim check-kernels --measurements cpu.json --hw cpu-calibrated.json --max-median-error 15

)";

po::variables_map parse(const std::vector<std::string>& args, const po::options_description& options,
                        const char* command) {
  po::variables_map vm;
  parse_args(args, options, nullptr, vm, command);
  return vm;
}

// Third-party tables publish times without ptsim's result checks: counted
// only when asked, and said so.
void accept_unverified(hardware::MeasurementSet& set, std::ostream& out) {
  std::size_t n = 0;
  for (auto& k : set.kernels)
    if (!k.verified) {
      k.verified = true;
      ++n;
    }
  if (n > 0) fmt::print(out, "note: using {} measurements whose results ptsim did not check (--include-unverified)\n", n);
}

void require(const std::string& value, const char* flag, const char* command) {
  if (value.empty()) throw ConfigError(fmt::format("ptsim {}: {} is required; see --help", command, flag));
}

}  // namespace

int run_calibrate(const std::vector<std::string>& args, std::ostream& out) {
  std::string measurements, hw, output;
  po::options_description options("Options");
  options.add_options()
      ("measurements", po::value(&measurements)->value_name("FILE"), "measured kernel times (ptsim-measurements/1)")
      ("hw", po::value(&hw)->value_name("PROFILE"), "the hardware profile to calibrate")
      ("output,o", po::value(&output)->value_name("OUT"), "the calibrated profile to write")
      ("fit-attention", "fit the attention efficiencies to the measured kernel too")
      ("gemm-scalar", "fit one GEMM ratio per dtype (the median measured/analytic over every other GEMM by "
                      "size) instead of a grid table: for GEMMs measured at scattered shapes, such as the "
                      "linear layers of real models")
      ("include-unverified", "use measurements whose results were not checked (third-party tables)")
      ("help,h", "show this help");
  const po::variables_map vm = parse(args, options, "calibrate");
  if (vm.count("help")) {
    std::ostringstream text;
    text << options;
    fmt::print(out, "{}{}", kCalibrateUsage, text.str());
    return 0;
  }
  require(measurements, "--measurements FILE", "calibrate");
  require(hw, "--hw PROFILE", "calibrate");
  require(output, "-o OUT", "calibrate");
  config::InputFiles read;
  read.record(measurements);
  read.record(hw);
  check_output_paths({{"-o", output}}, read);
  auto set = config::load_measurements(measurements, read);
  if (vm.count("include-unverified")) accept_unverified(set, out);
  const auto profile = config::load_hardware(hw, read);
  const bool fit_attention = vm.count("fit-attention") != 0;
  const bool gemm_scalar = vm.count("gemm-scalar") != 0;
  const hardware::Calibration c = calibrate::fit(set, profile, {.attention = fit_attention, .gemm_scalar = gemm_scalar});
  const std::string text = config::calibrated_profile_json(hw, read, c);
  write_output_file(output, read, [&](std::ostream& o) { o << text; });
  fmt::print(out, "calibrated {} from {} ({} kernels, {} on {})\n", profile.name, measurements,
             set.kernels.size(), set.device, set.date);
  for (const auto& [dtype, t] : c.gemm)
    if (c.gemm_fit == hardware::GemmFit::Scalar)
      fmt::print(out, "  gemm {}: one measured/analytic ratio, {:.4f} (median over the fitted half)\n", dtype,
                 t.ratio.front());
    else
      fmt::print(out, "  gemm {}: {}×{}×{} grid, measured/analytic ratio {:.3f} … {:.3f}\n", dtype,
               t.log2_m.size(), t.log2_n.size(), t.log2_k.size(),
               *std::min_element(t.ratio.begin(), t.ratio.end()), *std::max_element(t.ratio.begin(), t.ratio.end()));
  for (const auto& [kernel, t] : c.memory)
    fmt::print(out, "  {} memory efficiency {:.3f} … {:.3f} over {} sizes\n", kernel,
               *std::min_element(t.efficiency.begin(), t.efficiency.end()),
               *std::max_element(t.efficiency.begin(), t.efficiency.end()), t.efficiency.size());
  if (c.kernel_launch_overhead_s) fmt::print(out, "  launch overhead {:.2f} µs\n", *c.kernel_launch_overhead_s * 1e6);
  if (c.attention_forward_efficiency) fmt::print(out, "  attention forward efficiency {:.3f}\n", *c.attention_forward_efficiency);
  if (c.attention_backward_efficiency) fmt::print(out, "  attention backward efficiency {:.3f}\n", *c.attention_backward_efficiency);
  if (!fit_attention) {
    const auto measured = calibrate::fit(set, profile, {.attention = true, .gemm_scalar = gemm_scalar});
    if (measured.attention_forward_efficiency || measured.attention_backward_efficiency)
      fmt::print(out, "  attention: kept the profile's efficiencies (forward {:.3f}, backward {:.3f}); the measured "
                      "kernel reached {:.3f}, {:.3f} (--fit-attention to use them)\n",
                 profile.gpu.attention_forward_efficiency, profile.gpu.attention_backward_efficiency,
                 measured.attention_forward_efficiency.value_or(0), measured.attention_backward_efficiency.value_or(0));
  }
  fmt::print(out, "wrote {}\n", output);
  return 0;
}

int run_check_kernels(const std::vector<std::string>& args, std::ostream& out) {
  std::string measurements, hw, json;
  double bound = -1;
  po::options_description options("Options");
  options.add_options()
      ("measurements", po::value(&measurements)->value_name("FILE"), "measured kernel times (ptsim-measurements/1)")
      ("hw", po::value(&hw)->value_name("PROFILE"), "the (calibrated) hardware profile to check")
      ("json", po::value(&json)->value_name("FILE"), "write the check as JSON")
      ("max-median-error", po::value(&bound)->value_name("PCT"), "fail (exit 4) above this median |error| %")
      ("all", "check every kernel, not only those calibration holds out")
      ("include-unverified", "check measurements whose results were not checked (third-party tables)")
      ("help,h", "show this help");
  const po::variables_map vm = parse(args, options, "check-kernels");
  if (vm.count("help")) {
    std::ostringstream text;
    text << options;
    fmt::print(out, "{}{}", kCheckUsage, text.str());
    return 0;
  }
  require(measurements, "--measurements FILE", "check-kernels");
  require(hw, "--hw PROFILE", "check-kernels");
  if (vm.count("max-median-error") && !(bound >= 0))
    throw ConfigError(fmt::format("--max-median-error = {} must be a percentage ≥ 0", bound));
  config::InputFiles read;
  read.record(measurements);
  read.record(hw);
  check_output_paths({{"--json", json}}, read);
  auto set = config::load_measurements(measurements, read);
  if (vm.count("include-unverified")) accept_unverified(set, out);
  const auto profile = config::load_hardware(hw, read);
  const auto report = calibrate::check(set, profile, vm.count("all") > 0);

  fmt::print(out, "{} kernels of {} ({}) against {}{}\n", report.summary.count, set.device, set.date, profile.name,
             profile.calibration ? fmt::format(" (calibrated from {})", profile.calibration->measurements) : "");
  fmt::print(out, "{:<12} {:<5} {:<26} {:>12} {:>12} {:>9}\n", "op", "dtype", "shape", "measured", "predicted", "error");
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& k : report.kernels) {
    fmt::print(out, "{:<12} {:<5} {:<26} {:>9.2f} µs {:>9.2f} µs {:>+8.1f}%\n", k.op, k.dtype, k.shape,
               k.measured_s * 1e6, k.predicted_s * 1e6, k.error_pct);
    rows.push_back({{"index", k.index}, {"op", k.op}, {"dtype", k.dtype}, {"shape", k.shape},
                    {"measured_s", k.measured_s}, {"predicted_s", k.predicted_s}, {"error_pct", k.error_pct}});
  }
  const auto& s = report.summary;
  fmt::print(out, "summary: {} kernels, median |error| {:.1f}%, mean {:.1f}%, max {:.1f}% ({} skipped)\n", s.count,
             s.median_abs_error_pct, s.mean_abs_error_pct, s.max_abs_error_pct, report.skipped);
  if (!json.empty())
    write_output_file(json, read, [&](std::ostream& o) {
      nlohmann::ordered_json j;
      j["schema_version"] = 1;
      j["measurements"] = measurements;
      j["hardware"] = profile.name;
      j["kernels"] = rows;
      j["summary"] = {{"count", s.count},
                      {"median_abs_error_pct", s.median_abs_error_pct},
                      {"mean_abs_error_pct", s.mean_abs_error_pct},
                      {"max_abs_error_pct", s.max_abs_error_pct},
                      {"skipped", report.skipped}};
      o << j.dump(2) << '\n';
    });
  if (s.count == 0) {
    // Say which flag brings the skipped kernels in.
    std::vector<std::string> why;
    if (report.skipped_unverified > 0)
      why.push_back(fmt::format("{} are measurements whose results were not checked (third-party tables; "
                                "--include-unverified checks them)",
                                report.skipped_unverified));
    if (report.skipped_fitted > 0)
      why.push_back(fmt::format("{} are the half {} was calibrated on (--all checks them)", report.skipped_fitted,
                                profile.name));
    throw ConfigError(fmt::format("{}: no kernel could be checked{}{}", measurements, why.empty() ? "" : ": ",
                                  fmt::join(why, "; ")));
  }
  if (bound >= 0 && s.median_abs_error_pct > bound) {
    fmt::print(out, "FAIL: median |error| {:.1f}% exceeds --max-median-error {}%\n", s.median_abs_error_pct, bound);
    return 4;
  }
  return 0;
}

}  // namespace ptsim::cli
