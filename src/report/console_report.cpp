// StepResult → terminal summary (see console_report.hpp).
#include "ptsim/report/console_report.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "ptsim/common/units.hpp"
#include "ptsim/strategy/parallel_config.hpp"

namespace ptsim::report {

namespace {

constexpr int kBarWidth = 24;

std::string duration(double s) {
  if (s >= 1) return fmt::format("{:.3f} s", s);
  if (s >= 1e-3) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.1f} µs", s * 1e6);
}

// Memory in GiB, or MiB below one GiB.
std::string memory(double bytes) {
  if (bytes >= units::kGiB) return fmt::format("{:.1f} GiB", bytes / units::kGiB);
  return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024.0));
}

std::string volume(double bytes) {
  if (bytes >= 1e9) return fmt::format("{:.1f} GB", bytes / 1e9);
  if (bytes >= 1e6) return fmt::format("{:.1f} MB", bytes / 1e6);
  return fmt::format("{:.1f} kB", bytes / 1e3);
}

std::string bar(double fraction) {
  const int full = static_cast<int>(std::lround(std::clamp(fraction, 0.0, 1.0) * kBarWidth));
  std::string s;
  for (int i = 0; i < kBarWidth; ++i) s += i < full ? "█" : "░";
  return s;
}

std::string thousands(std::uint64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// The header's word on the host model: nothing at the default cost per
// task; what CUDA graphs replay.
std::string host_note(const StepResult& r) {
  std::string note;
  if (r.host_overhead_s == 0) {
    note = " · host not modelled";
  } else if (r.host_overhead_s != strategy::kDefaultHostOverheadS) {
    note = fmt::format(" · host {} per task", duration(r.host_overhead_s));
  }
  if (r.cuda_graph_impl == "full_iteration") return note + " · CUDA graph of the whole iteration";
  if (r.cuda_graph_impl != "none")
    note += fmt::format(" · CUDA graphs ({}) of {}", r.cuda_graph_impl,
                        r.cuda_graph_modules.empty() ? "whole layers"
                                                     : fmt::format("{}", fmt::join(r.cuda_graph_modules, ", ")));
  return note;
}

}  // namespace

void print_console(const StepResult& r, std::ostream& out) {
  std::string layout = fmt::format("TP {}", r.tp);
  if (r.sequence_parallel) layout += " (SP)";
  if (r.cp > 1) layout += fmt::format(" · CP {}", r.cp);
  if (r.ep > 1) layout += fmt::format(" · EP {}", r.ep);
  if (r.expert_tp != r.tp) layout += fmt::format(" · ETP {}", r.expert_tp);
  layout += fmt::format(" · PP {}", r.pp);
  if (r.vpp > 1) layout += fmt::format(" × {} chunks", r.vpp);
  layout += fmt::format(" · DP {}", r.dp);
  if (r.zero_stage > 0) layout += fmt::format(" · {}ZeRO-{}", r.megatron_fsdp ? "Megatron-FSDP " : "", r.zero_stage);
  if (r.optimizer_instances > 1)
    layout += fmt::format(" × {} optimizer instances{}", r.optimizer_instances,
                          r.outer_optimizer_sharding ? " (Hybrid-FSDP)" : "");
  if (!r.offload_modules.empty()) layout += fmt::format(" · offload {}", fmt::join(r.offload_modules, ", "));
  if (r.precision != "bf16") layout += " · " + upper(r.precision);
  if (!r.fp8_recipe.empty() && r.fp8_recipe != "delayed") layout += " " + r.fp8_recipe;  // delayed: the default
  if (r.fp8_attention) layout += ", attention too";
  if (r.bf16_layers_at_start + r.bf16_layers_at_end > 0)
    layout += fmt::format(" (first {} and last {} layers bf16)", r.bf16_layers_at_start, r.bf16_layers_at_end);
  if (!r.module_precision.empty()) layout += fmt::format(" ({})", fmt::join(r.module_precision, ", "));
  fmt::print(out, "{} on {} × {} ({} node{}) · {} · {} micro-batch{} of {} · seq {} · {}{}{}\n", r.model_name, r.gpus,
             r.gpu_name, r.nodes, r.nodes == 1 ? "" : "s", layout, r.num_microbatches,
             r.num_microbatches == 1 ? "" : "es", r.micro_batch_size, r.seq_length, upper(r.schedule),
             r.recompute == "none" ? ""
             : r.recompute == "selective"
                 ? fmt::format(" · recompute selective ({})",
                               r.recompute_modules.empty() ? "nothing"
                                                           : fmt::format("{}", fmt::join(r.recompute_modules, ", ")))
                 : fmt::format(" · recompute {}", r.recompute),
             host_note(r));
  const double t = r.step_time_s;
  // MFU is against the dense bf16 peak whatever the run's format, so a
  // low-precision run can exceed 100%: say so where it can.
  const bool low_precision = r.precision != "bf16" && r.precision != "fp16";
  fmt::print(out, "step time          {:>10}    tokens/s {:>10.4g}    model TFLOP/s/GPU {:.1f}    MFU {:.1f}%{}\n",
             duration(t), r.throughput.tokens_per_s, r.throughput.model_tflops_per_gpu, 100 * r.throughput.mfu,
             low_precision ? " of the bf16 peak" : "");
  const auto row = [&](const char* name, double s, const std::string& note) {
    const double f = t > 0 ? s / t : 0;
    fmt::print(out, "  {:<16} {:>10} {:>4.0f}%  {}{}\n", name, duration(s), 100 * f, bar(f), note);
  };
  row("compute", r.breakdown.compute_s,
      r.breakdown.recompute_s > 0 ? fmt::format("  (recompute {})", duration(r.breakdown.recompute_s)) : "");
  row("pipeline bubble", r.breakdown.pipeline_bubble_s, "");
  // Shown when it matters: every run waits for the host's first issue.
  if (r.breakdown.host_issue_s > 1e-3 * t) row("host issue", r.breakdown.host_issue_s, "  (GPU idle, the host behind)");
  std::string comm_note;
  for (const char* dim : kDimensions) {
    const auto it = r.communication.find(dim);
    if (it == r.communication.end() || it->second.time_s <= 0) continue;
    const auto& d = it->second;
    comm_note += fmt::format("{}{} {} of {} exposed ({:.0f}% hidden)", comm_note.empty() ? "" : " · ",
                             upper(dim), duration(d.exposed_s), duration(d.time_s),
                             100 * (1 - d.exposed_s / d.time_s));
  }
  row("exposed comm", r.breakdown.exposed_communication_s,
      comm_note.empty() ? "" : "  (" + comm_note + ")");
  row("optimizer", r.breakdown.optimizer_s, "");

  // The stage that works longest (kernels plus exposed communication): in a
  // pipeline the critical rank often only waits for it.
  if (r.stages.size() > 1) {
    const auto busiest = std::max_element(r.stages.begin(), r.stages.end(), [](const auto& a, const auto& b) {
      return a.breakdown.compute_s + a.breakdown.exposed_communication_s <
             b.breakdown.compute_s + b.breakdown.exposed_communication_s;
    });
    std::string exposed;
    for (const char* dim : kDimensions) {
      const auto it = busiest->exposed_s.find(dim);
      if (it != busiest->exposed_s.end() && it->second > 0)
        exposed += fmt::format("{}{} {}", exposed.empty() ? "" : " · ", upper(dim), duration(it->second));
    }
    fmt::print(out, "busiest stage      {}: compute {} · exposed comm {}{} · idle {}\n", busiest->stage,
               duration(busiest->breakdown.compute_s), duration(busiest->breakdown.exposed_communication_s),
               exposed.empty() ? "" : " (" + exposed + ")", duration(busiest->breakdown.pipeline_bubble_s));
  }
  const auto& m = r.memory;
  const std::string verdict =
      m.fits ? "fits"
             : fmt::format("DOES NOT FIT — needs {} more",
                           memory(static_cast<double>(m.peak_bytes + m.headroom_bytes - m.capacity_bytes)));
  const std::string headroom =
      m.headroom_bytes > 0 ? fmt::format(" − {} headroom", memory(static_cast<double>(m.headroom_bytes))) : "";
  fmt::print(out, "memory per GPU     {} of {}{}  {}   (params {} · grads {} · optimizer {} · activations {} peak, stage {})\n",
             memory(static_cast<double>(m.peak_bytes)), memory(static_cast<double>(m.capacity_bytes)), headroom,
             verdict,
             memory(static_cast<double>(m.params_bytes)), memory(static_cast<double>(m.grads_bytes)),
             memory(static_cast<double>(m.optimizer_bytes)), memory(static_cast<double>(m.activations_peak_bytes)),
             m.peak_stage);
  std::string volumes;
  for (const char* dim : kDimensions) {
    const auto it = r.communication.find(dim);
    const std::uint64_t bytes = it == r.communication.end() ? 0 : it->second.bytes;
    const bool always = std::string_view(dim) == "tp" || std::string_view(dim) == "pp" || std::string_view(dim) == "dp";
    if (bytes == 0 && !always) continue;
    volumes += fmt::format("{}{} {}", volumes.empty() ? "" : " · ", upper(dim), volume(static_cast<double>(bytes)));
  }
  fmt::print(out, "communication      {} per step, on rank {} (stage {})\n", volumes, r.critical_rank,
             r.critical_stage);
  const std::string wall = r.simulation.wall_s ? fmt::format(" in {:.2f} s", *r.simulation.wall_s) : "";
  fmt::print(out, "simulated          {} events ({} tasks){} ({}, {} rank{})\n", thousands(r.simulation.events),
             thousands(r.simulation.tasks), wall, r.simulation.mode, r.simulation.ranks_simulated,
             r.simulation.ranks_simulated == 1 ? "" : "s");
  // Kernels shorter than what a PyTorch host spends issuing one (the
  // default host cost, strategy::kDefaultHostOverheadS) with the host model
  // switched off: the step is likely host-bound.
  if (r.host_overhead_s == 0 && r.cuda_graph_impl == "none" && r.mean_kernel_s > 0 &&
      r.mean_kernel_s < strategy::kDefaultHostOverheadS)
    fmt::print(out,
               "note               kernels average {}, less than the ~65 µs a PyTorch host spends issuing one "
               "(docs/accuracy.md): this step may be host-bound, which --host-overhead-us 0 leaves out\n",
               duration(r.mean_kernel_s));
}

}  // namespace ptsim::report
