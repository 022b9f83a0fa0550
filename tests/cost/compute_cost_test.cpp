// The compute model against hand calculations and published ceilings.
#include "ptsim/cost/compute_cost.hpp"

#include <cmath>

#include "ptsim/cost/gemm_model.hpp"
#include "test_support.hpp"

using namespace ptsim;

namespace {
taskgraph::Task gemm(double m, double n, double k) {
  taskgraph::Task t;
  t.compute = taskgraph::ComputeKind::Matmul;
  t.kernel = taskgraph::KernelClass::Gemm;
  t.shape = {static_cast<std::uint32_t>(m), static_cast<std::uint32_t>(n), static_cast<std::uint32_t>(k), 1};
  t.flops = 2 * m * n * k;
  t.bytes = static_cast<std::uint64_t>(2 * (m * k + k * n + m * n));
  return t;
}

// Fused attention forward, bh = batch_heads, s tokens, d = 128: 4·bh·s²·128 FLOP.
taskgraph::Task attention_forward(std::uint32_t s = 4096, std::uint32_t batch_heads = 32) {
  taskgraph::Task t;
  t.compute = taskgraph::ComputeKind::Attention;
  t.kernel = taskgraph::KernelClass::Attention;
  t.shape = {batch_heads, s, s, 128};
  t.flops = 4.0 * batch_heads * s * s * 128;
  return t;
}
}  // namespace

TEST_CASE("Tile and wave quantization of hand-computed shapes", "[cost]") {
  // 8192×8192 on 132 SMs: 64·64 = 4096 tiles of 128×128, ⌈4096/132⌉ = 32 waves,
  // 4096 / (32·132) = 0.9697 of the last wave's SMs busy on average.
  const auto a = cost::gemm_quantization(8192, 8192, 1, 132);
  CHECK(a.tiles == 4096);
  CHECK(a.waves == 32);
  CHECK(a.tile_efficiency == 1);
  CHECK(a.wave_efficiency == Approx(4096.0 / 4224));
  // 1000×1000 on 108 SMs: 8·8 = 64 tiles covering 1024², 10⁶/1024² = 0.9537;
  // one wave with 64 of 108 SMs busy.
  const auto b = cost::gemm_quantization(1000, 1000, 1, 108);
  CHECK(b.tiles == 64);
  CHECK(b.tile_efficiency == Approx(1e6 / (1024.0 * 1024.0)));
  CHECK(b.waves == 1);
  CHECK(b.wave_efficiency == Approx(64.0 / 108));
  // A batch of 12 heads of 2048×2048 scores: 256 tiles each, 3072 in all.
  CHECK(cost::gemm_quantization(2048, 2048, 12, 108).tiles == 3072);
}

TEST_CASE("Uncalibrated GEMMs reach the published ceilings", "[cost]") {
  // shared/validation/hardware_reference.md: bf16 8192³ measured at 769–798
  // TFLOP/s on H200, MAMF 794.5 on H100 and 271.2 on A100.
  const auto rate = [](const std::string& stem) {
    auto hw = test::shipped_hardware(stem);
    hw.calibration.reset();  // the datasheet and MAMF figures alone
    const auto t = gemm(8192, 8192, 8192);
    return t.flops / (cost::compute_seconds(hw, t, cost::Load::Burst) - cost::launch_overhead_seconds(hw));
  };
  const double h200 = rate("h200-sxm-141gb");
  CHECK(h200 >= 770e12);
  CHECK(h200 <= 800e12);
  CHECK(rate("h100-sxm5-80gb") == Approx(795e12).epsilon(0.01));
  CHECK(rate("a100-sxm4-80gb") == Approx(271e12).epsilon(0.015));
  // Calibrated from OpenXLA's table (780 TFLOP/s at 4096³, its largest
  // shape, which the table's clamp carries to 8192³): within 2% of MAMF too.
  const auto h100 = test::shipped_hardware("h100-sxm5-80gb");
  REQUIRE(h100.calibration);
  const auto t = gemm(8192, 8192, 8192);
  CHECK(t.flops / cost::compute_seconds(h100, t, cost::Load::Burst) == Approx(780e12).epsilon(0.02));
  // Calibrated from Vidur's profiled linear layers of real models (one
  // ratio): 8192³ lands inside the spread those measurements have for every
  // GEMM with m, n, k ≥ 2048 (10th to 90th percentile 205.7 … 241.0 TFLOP/s,
  // median 226.5, over 11,307 of them), below the MAMF ceiling above.
  const auto a100 = test::shipped_hardware("a100-sxm4-80gb");
  REQUIRE(a100.calibration);
  const double a100_rate = t.flops / (cost::compute_seconds(a100, t, cost::Load::Burst) - cost::launch_overhead_seconds(a100));
  CHECK(a100_rate >= 205.7e12);
  CHECK(a100_rate <= 241.0e12);
}

TEST_CASE("Blackwell profiles without a table of their own take the B200's measured GEMM shapes", "[cost]") {
  // The ratio table scales each profile's own tile model, so at a shape
  // every profile tiles alike the times differ by their ceilings only:
  // 8192 × 8192 × 8192 is 4096 tiles, 28 waves on 148 SMs (B200, B300,
  // GB200) and 27 on 152 (GB300; 0.998 against 0.989 of a full wave).
  const auto t = gemm(8192, 8192, 8192);
  const auto seconds = [&](const std::string& stem) {
    const auto hw = test::shipped_hardware(stem);
    REQUIRE(hw.calibration);
    return cost::compute_seconds(hw, t, cost::Load::Burst);  // a table's ratio holds the launch
  };
  const double b200 = seconds("b200-sxm-180gb");
  // Ceilings: B200 2250 · 0.7813, B300 2250 · 0.7912, GB200 2500 · 0.7542.
  CHECK(seconds("b300-sxm-288gb") == Approx(b200 * 0.7813 / 0.7912));
  CHECK(seconds("gb200-nvl72") == Approx(b200 * (2250 * 0.7813) / (2500 * 0.7542)));
  // GB300: 2500 · 0.7867 on 152 SMs, wave efficiencies 4096/(28·148) and 4096/(27·152).
  const double wave148 = 4096.0 / (28 * 148), wave152 = 4096.0 / (27 * 152);
  CHECK(seconds("gb300-nvl72") == Approx(b200 * (2250 * 0.7813 * wave148) / (2500 * 0.7867 * wave152)));
}

TEST_CASE("Memory-bound kernels run at the achieved bandwidth", "[cost]") {
  // H200 device-to-device copy of 8.6 GB: about 4.3 TB/s read plus written
  // (shared/validation/hardware_reference.md, H200 measurements).
  const auto h200 = test::shipped_hardware("h200-sxm-141gb");
  taskgraph::Task copy;
  copy.kernel = taskgraph::KernelClass::Copy;
  copy.bytes = 2 * 8'600'000'000ull;
  CHECK(static_cast<double>(copy.bytes) / cost::compute_seconds(h200, copy, cost::Load::Burst) == Approx(4.3e12).epsilon(0.01));
  // A100: 2 GB at 2039 GB/s · 0.87 plus the 2.6 µs launch overhead.
  const auto a100 = test::shipped_hardware("a100-sxm4-80gb");
  copy.bytes = 2'000'000'000;
  CHECK(cost::compute_seconds(a100, copy, cost::Load::Burst) == Approx(2e9 / (2039e9 * 0.87) + 2.6e-6).epsilon(1e-12));
  // The simulation's integer time, at burst rates here (the profile's
  // sustained memory fraction left out): 1.127440 ms + 2.6 µs, in ns.
  auto burst = a100;
  burst.gpu.sustained.reset();
  CHECK(cost::compute_time(burst, copy).ns() == 1'130'040);
}

TEST_CASE("A Mamba-2 SSD kernel's FLOPs run at its SMs' issue rate where HBM would be faster", "[cost]") {
  // The H100's measured rates (mamba_ssm's training kernels, NX-AI's
  // benchmark; cost/compute_cost.hpp): 266.4 FLOPs a cycle per SM forward,
  // 146.7 backward, from 132 SMs at 1,980 MHz: 6.9626e13 and 3.8342e13
  // FLOP/s.
  const double h100_forward = 266.4 * 132 * 1980e6;
  const double h100_backward = 146.7 * 132 * 1980e6;
  taskgraph::Task ssd;
  ssd.kernel = taskgraph::KernelClass::StateSpaceScan;
  ssd.flops = 1e12;
  ssd.bytes = 1'000'000'000;  // 0.33 ms at the H100's 3.35 TB/s · 0.9: the SMs are slower
  const auto h100 = test::shipped_hardware("h100-sxm5-80gb");
  CHECK(cost::compute_seconds(h100, ssd, cost::Load::Sustained) == Approx(1e12 / h100_forward + 2.4e-6).epsilon(1e-9));
  // A gradient kernel runs at the backward's rate.
  auto gradient = ssd;
  gradient.flags = taskgraph::kBackwardPass;
  CHECK(cost::compute_seconds(h100, gradient, cost::Load::Sustained) ==
        Approx(1e12 / h100_backward + 2.4e-6).epsilon(1e-9));
  // A GB300's 152 SMs at 2,070 MHz issue 1.204 times as fast as an H100's.
  const auto gb300 = test::shipped_hardware("gb300-nvl72");
  const double gb300_forward = h100_forward * (152.0 * 2070) / (132.0 * 1980);
  CHECK(cost::compute_seconds(gb300, ssd, cost::Load::Sustained) ==
        Approx(1e12 / gb300_forward + gb300.gpu.kernel_launch_overhead_s).epsilon(1e-9));
  // Few FLOPs over many bytes (a state-passing scan's kind): HBM sets the
  // time, as for any memory-bound kernel. A 40 GB A100: 1555 GB/s at 0.89.
  const auto a100 = test::shipped_hardware("a100-sxm4-40gb");
  auto scan = ssd;
  scan.flops = 1e9;
  CHECK(1e9 / (266.4 * 108 * 1410e6) < 1e9 / (1555e9 * 0.89));
  CHECK(cost::compute_seconds(a100, scan, cost::Load::Burst) == Approx(1e9 / (1555e9 * 0.89) + 2.6e-6).epsilon(1e-9));
  // A profile without the clock cannot price it, and says what is missing.
  auto unclocked = h100;
  unclocked.gpu.sustained->boost_clock_mhz.reset();
  CHECK_THROWS_WITH(cost::compute_seconds(unclocked, ssd, cost::Load::Sustained),
                    Catch::Matchers::Contains("boost_clock_MHz"));
}

TEST_CASE("Fused attention runs at the attention efficiency, half the work when causal", "[cost]") {
  // B200 without its table by length (one efficiency at every length), bh =
  // 32, s = 4096, d = 128: 4·32·4096²·128 = 2.75e11 FLOP forward at 2250e12 ·
  // 0.682; causal halves the work.
  auto b200 = test::shipped_hardware("b200-sxm-180gb");
  b200.gpu.flash_attention_by_sequence.reset();
  taskgraph::Task t = attention_forward();
  const double launch = cost::launch_overhead_seconds(b200);
  const double full = cost::compute_seconds(b200, t, cost::Load::Burst) - launch;
  CHECK(full == Approx(t.flops / (2250e12 * 0.682)));
  t.flags = taskgraph::kCausal;
  CHECK(cost::compute_seconds(b200, t, cost::Load::Burst) - launch == Approx(full / 2));
  // Backward: the model's count is twice the forward; FlashAttention runs 2.5×.
  t.flags = taskgraph::kBackwardPass;
  t.flops *= 2;
  CHECK(cost::compute_seconds(b200, t, cost::Load::Burst) - launch == Approx(2.5 * 4.0 * 32 * 4096 * 4096 * 128 / (2250e12 * 0.604)));
  // The length does not matter where the profile has no table.
  taskgraph::Task short_t = attention_forward(512);
  CHECK(cost::compute_seconds(b200, short_t, cost::Load::Burst) - launch == Approx(short_t.flops / (2250e12 * 0.682)));
}

TEST_CASE("On A100, forward plus backward attention takes FlashAttention-2's measured time for its length",
          "[cost]") {
  // FlashAttention-2 paper Fig. 4(b)/(d), A100 80GB SXM4, head dim 128,
  // forward + backward: 196 TFLOP/s at 4k without a mask, 155 causal at 2k;
  // 203 at 16k without a mask, which the profile's per-pass maxima (0.73
  // and 0.63 of 312) reproduce to 0.8 % (3.5 / (1/227.8 + 2.5/196.6) =
  // 204.6), hence the tolerance. FLOPs counted as the paper does: forward
  // 4·s²·d·bh (half causal), backward 2.5 × forward.
  const auto a100 = test::shipped_hardware("a100-sxm4-80gb");
  const double launch = cost::launch_overhead_seconds(a100);
  const auto fwd_bwd = [&](std::uint32_t s, bool causal) {
    taskgraph::Task f = attention_forward(s);
    if (causal) f.flags = taskgraph::kCausal;
    taskgraph::Task b = f;
    b.flags |= taskgraph::kBackwardPass;
    b.flops *= 2;
    const double seconds = cost::compute_seconds(a100, f, cost::Load::Burst) + cost::compute_seconds(a100, b, cost::Load::Burst) - 2 * launch;
    const double paper_flops = 3.5 * 4.0 * 32 * static_cast<double>(s) * static_cast<double>(s) * 128 / (causal ? 2 : 1);
    return paper_flops / seconds;
  };
  CHECK(fwd_bwd(16384, false) == Approx(203e12).epsilon(0.01));
  CHECK(fwd_bwd(4096, false) == Approx(196e12).epsilon(0.01));
  CHECK(fwd_bwd(2048, true) == Approx(155e12).epsilon(0.01));
  CHECK(fwd_bwd(8192, true) == Approx(182e12).epsilon(0.01));
  // Below the table's first length (2k) the 2k factor holds.
  CHECK(fwd_bwd(1024, true) == Approx(fwd_bwd(2048, true)).epsilon(1e-9));
}

TEST_CASE("On Hopper, fused attention runs at the measured rate for its length and mask", "[cost]") {
  // The published TFLOP/s themselves, not the profile's factors: FlashAttention-3
  // paper Fig. 5(c)/(d), H100, head dim 128 (FlashAttention-3 at 4k: 638 without
  // a mask, 579 causal; at 512: 292 causal; cuDNN at 4k: 609, 518 causal);
  // backward, cuDNN 9.19 on H200 (cudnn-frontend results), 4k causal 474 of
  // 612 at 16k, applied to the FlashAttention-3 paper's 16k cuDNN figure, 516.
  const auto h100 = test::shipped_hardware("h100-sxm5-80gb");
  const double launch = cost::launch_overhead_seconds(h100);
  const auto seconds = [&](taskgraph::Task t) { return cost::compute_seconds(h100, t, cost::Load::Burst) - launch; };
  taskgraph::Task t = attention_forward();
  CHECK(seconds(t) == Approx(t.flops / 638e12).epsilon(2e-3));
  t.flags = taskgraph::kCausal;
  CHECK(seconds(t) == Approx(t.flops / 2 / 579e12).epsilon(2e-3));
  taskgraph::Task s512 = attention_forward(512);
  s512.flags = taskgraph::kCausal;
  CHECK(seconds(s512) == Approx(s512.flops / 2 / 292e12).epsilon(2e-3));
  // Past the table's longest length (16k) the 16k rate holds: 648.
  const taskgraph::Task s64k = attention_forward(65536);
  CHECK(seconds(s64k) == Approx(s64k.flops / 648e12).epsilon(2e-3));
  // The profile rounds cuDNN's 16k efficiencies (595/989 = 0.6016 to 0.60,
  // 516/989 = 0.5217 to 0.52): within 0.4%.
  t.flags = taskgraph::kCudnn;
  CHECK(seconds(t) == Approx(t.flops / 609e12).epsilon(4e-3));
  t.flags = taskgraph::kCudnn | taskgraph::kCausal;
  CHECK(seconds(t) == Approx(t.flops / 2 / 518e12).epsilon(4e-3));
  t.flags = taskgraph::kCudnn | taskgraph::kCausal | taskgraph::kBackwardPass;
  t.flops *= 2;
  CHECK(seconds(t) == Approx(0.5 * 2.5 * 4.0 * 32 * 4096 * 4096 * 128 / (516e12 * 474 / 612)).epsilon(4e-3));
  // Between two lengths the factor is interpolated in log2 of the length:
  // at 2^12.5 tokens, halfway between 4k's 579 and 8k's 602 (causal).
  taskgraph::Task mid = attention_forward(5793);
  mid.flags = taskgraph::kCausal;
  CHECK(seconds(mid) == Approx(mid.flops / 2 / ((579.0 + 602.0) / 2 * 1e12)).epsilon(2e-3));
  CHECK(cost::attention_sequence_factor(*h100.gpu.flash_attention_by_sequence, false, true, 4096 * std::sqrt(2.0)) *
            648 ==
        Approx((579.0 + 602.0) / 2).epsilon(2e-3));
}

TEST_CASE("FlashAttention-3 on an H100 takes near the time NX-AI's benchmark measured for it", "[cost]") {
  // An independent timing of the kernel the H100 profile's flash figures
  // describe: NX-AI's mlstm_kernels benchmark for the TFLA paper (arXiv
  // 2503.14376; results pickle at commit 0172609), FlashAttention-3 on an
  // H100 in bf16, causal, 32 heads of 128, 8 sequences of 8,192 tokens, its
  // inputs bf16 leaves: 7.481664 ms forward, 32.287296 ms forward and
  // backward, whose backward includes the benchmark's loss (a sum reading
  // the 0.54 GB output) and its broadcast gradient made contiguous (0.54 GB
  // written): 0.356 ms at the profile's HBM rate and two launches. ptsim's
  // burst figures, which come from the FlashAttention-3 paper and cuDNN's
  // backward shape, put the forward 2% and the backward 9% under it.
  const auto h100 = test::shipped_hardware("h100-sxm5-80gb");
  taskgraph::Task t = attention_forward(8192, 8 * 32);
  t.flags = taskgraph::kCausal;
  CHECK(cost::compute_seconds(h100, t, cost::Load::Burst) / 7.481664e-3 == Approx(0.977).margin(0.01));
  t.flags = taskgraph::kCausal | taskgraph::kBackwardPass;
  t.flops *= 2;
  const double harness = 2 * 0.536870912e9 / (3350e9 * 0.9) + 2 * 2.4e-6;
  CHECK(cost::compute_seconds(h100, t, cost::Load::Burst) / (32.287296e-3 - 7.481664e-3 - harness) ==
        Approx(0.907).margin(0.01));
}

TEST_CASE("On a GB300, fused attention runs at NVIDIA's GB300 measurement", "[cost]") {
  // cudnn-frontend's GB300 run (cuDNN 9.22.0, head dim 128, batch 2), the
  // measured times themselves: forward 0.323 ms at 4k causal and 8.734 ms at
  // 16k without a mask; backward 1.101 ms at 4k causal; 64 query heads.
  const auto gb300 = test::shipped_hardware("gb300-nvl72");
  const double launch = cost::launch_overhead_seconds(gb300);
  const auto seconds = [&](taskgraph::Task t) { return cost::compute_seconds(gb300, t, cost::Load::Burst) - launch; };
  const auto batch2 = [](std::uint32_t s) {
    taskgraph::Task t = attention_forward(s);
    t.shape[0] = 2 * 64;
    t.flops = 4.0 * 2 * 64 * s * s * 128;
    return t;
  };
  taskgraph::Task t = batch2(4096);
  t.flags = taskgraph::kCausal;
  CHECK(seconds(t) == Approx(0.323e-3).epsilon(5e-3));
  t.flags |= taskgraph::kBackwardPass;
  t.flops *= 2;  // the task's FLOPs of a backward: twice the forward's GEMM work
  CHECK(seconds(t) == Approx(1.101e-3).epsilon(5e-3));
  CHECK(seconds(batch2(16384)) == Approx(8.734e-3).epsilon(5e-3));
}

TEST_CASE("FP8 attention runs at cuDNN's measured FP8 rates, or is refused where none is measured", "[cost]") {
  // cudnn-frontend's GB300 run, head dim 128, 64 heads, batch 2: MXFP8 at
  // 4k causal 0.242 ms forward and 1.203 ms backward; per-tensor FP8 at 16k
  // without a mask 5.529 ms forward; gpt-oss's window of 128 at 4k, MXFP8
  // backward 1.871 ms (a quarter of bf16's rate).
  const auto gb300 = test::shipped_hardware("gb300-nvl72");
  const auto seconds = [&](const taskgraph::Task& t) {
    return cost::compute_seconds(gb300, t, cost::Load::Burst) - cost::launch_overhead_seconds(gb300);
  };
  const auto batch2 = [](std::uint32_t s, Dtype dtype) {
    taskgraph::Task t = attention_forward(s);
    t.shape[0] = 2 * 64;
    t.flops = 4.0 * 2 * 64 * s * s * 128;
    t.dtype = dtype;
    return t;
  };
  taskgraph::Task t = batch2(4096, Dtype::Mxfp8);
  t.flags = taskgraph::kCausal;
  CHECK(seconds(t) == Approx(0.242e-3).epsilon(5e-3));
  t.flags |= taskgraph::kBackwardPass;
  t.flops *= 2;
  CHECK(seconds(t) == Approx(1.203e-3).epsilon(5e-3));
  CHECK(seconds(batch2(16384, Dtype::Fp8)) == Approx(5.529e-3).epsilon(5e-3));
  taskgraph::Task window = batch2(4096, Dtype::Mxfp8);
  const double band = 128.0 * 129 / 2 + (4096.0 - 128) * 128;
  window.shape = {256, 4096, 128, 64};
  window.flags = taskgraph::kSlidingWindow | taskgraph::kBackwardPass;
  window.flops = 2 * 4.0 * 256 * band * 64;
  CHECK(seconds(window) == Approx(1.871e-3).epsilon(0.01));
  // The H100 profiles carry no FP8 attention measurement.
  const auto h100 = test::shipped_hardware("h100-sxm5-80gb");
  CHECK_THROWS_WITH(cost::compute_seconds(h100, batch2(4096, Dtype::Fp8), cost::Load::Burst),
                    Catch::Contains("--fp8-dot-product-attention") && Catch::Contains("fp8_forward"));
}

TEST_CASE("At DeepSeek-V3's head shape, fused attention runs at that shape's measured times", "[cost]") {
  // cudnn-frontend's DeepSeek-V3 runs (cuDNN 9.22.0, 128 heads, query/key
  // head dim 192, value head dim 128, batch 2), the measured times: on the
  // GB300 at 4k causal, bf16 0.864 ms forward and 3.127 ms backward, MXFP8
  // 0.546 and 2.348 ms (where the Llama shape's MXFP8 backward is slower than
  // its bf16 one, this shape's is faster); at 16k without a mask, fp8
  // 12.794 ms forward. On the GB200 (the same run set), 4k causal bf16
  // backward 3.383 ms.
  const auto seconds = [](const hardware::HardwareProfile& hw, const taskgraph::Task& t) {
    return cost::compute_seconds(hw, t, cost::Load::Burst) - cost::launch_overhead_seconds(hw);
  };
  // The task as the workload builder writes it: 2·bh·s²·(192 + 128) FLOPs
  // forward, twice that backward (op_spec.cpp attention_op).
  const auto mla = [](std::uint32_t s, Dtype dtype, bool causal, bool backward) {
    taskgraph::Task t = attention_forward(s);
    t.shape = {2 * 128, s, s, 192};
    t.flops = (backward ? 2 : 1) * 2.0 * 256 * s * s * (192 + 128);
    t.dtype = dtype;
    t.flags = static_cast<std::uint8_t>((causal ? taskgraph::kCausal : 0) | (backward ? taskgraph::kBackwardPass : 0));
    return t;
  };
  const auto gb300 = test::shipped_hardware("gb300-nvl72");
  CHECK(seconds(gb300, mla(4096, Dtype::Bf16, true, false)) == Approx(0.864e-3).epsilon(5e-3));
  CHECK(seconds(gb300, mla(4096, Dtype::Bf16, true, true)) == Approx(3.127e-3).epsilon(5e-3));
  CHECK(seconds(gb300, mla(4096, Dtype::Mxfp8, true, false)) == Approx(0.546e-3).epsilon(5e-3));
  CHECK(seconds(gb300, mla(4096, Dtype::Mxfp8, true, true)) == Approx(2.348e-3).epsilon(5e-3));
  CHECK(seconds(gb300, mla(16384, Dtype::Fp8, false, false)) == Approx(12.794e-3).epsilon(5e-3));
  const auto gb200 = test::shipped_hardware("gb200-nvl72");
  CHECK(seconds(gb200, mla(4096, Dtype::Bf16, true, true)) == Approx(3.383e-3).epsilon(5e-3));
  // Another value head dim is not the measured shape: the Llama shape's
  // tables, at 4k causal backward 0.8125 of the 16k no-mask 1536 TFLOP/s.
  taskgraph::Task square = mla(4096, Dtype::Bf16, true, true);
  square.flops = 2 * 2.0 * 256 * 4096.0 * 4096 * (192 + 192);
  CHECK(square.flops * 0.5 * 1.25 / seconds(gb300, square) == Approx(1536e12 * 0.8125).epsilon(5e-3));
  // Nor does a GPU without a measurement at this shape take one (the H100).
  const auto h100 = test::shipped_hardware("h100-sxm5-80gb");
  taskgraph::Task llama = mla(4096, Dtype::Bf16, true, false);
  llama.shape[3] = 128;
  llama.flops = 2.0 * 256 * 4096.0 * 4096 * (128 + 128);
  const taskgraph::Task deepseek = mla(4096, Dtype::Bf16, true, false);
  CHECK(deepseek.flops / seconds(h100, deepseek) == Approx(llama.flops / seconds(h100, llama)).epsilon(1e-6));
}

TEST_CASE("A sliding window runs at its measured rate, and above it toward causal attention of its tile length",
          "[cost]") {
  // gpt-oss's windowed attention as cudnn-frontend times it on a GB300
  // (window 128, head dim 64, 128 heads, batch 2, 4096 tokens): forward
  // 0.202 ms, backward 0.442 ms, over the band's 4·256·(128·129/2 +
  // 3968·128)·64 FLOPs.
  const auto gb300 = test::shipped_hardware("gb300-nvl72");
  const auto seconds = [&](const hardware::HardwareProfile& hw, const taskgraph::Task& t) {
    return cost::compute_seconds(hw, t, cost::Load::Burst) - cost::launch_overhead_seconds(hw);
  };
  const auto window = [](double w, double s, bool backward) {
    taskgraph::Task t = attention_forward(static_cast<std::uint32_t>(s));
    t.shape = {256, static_cast<std::uint32_t>(s), static_cast<std::uint32_t>(w), 64};
    t.flags = static_cast<std::uint8_t>(taskgraph::kSlidingWindow | (backward ? taskgraph::kBackwardPass : 0));
    t.flops = (backward ? 2 : 1) * 4.0 * 256 * (w * (w + 1) / 2 + (s - w) * w) * 64;
    return t;
  };
  CHECK(seconds(gb300, window(128, 4096, false)) == Approx(0.202e-3).epsilon(0.01));
  CHECK(seconds(gb300, window(128, 4096, true)) == Approx(0.442e-3).epsilon(0.01));
  // Above it: a window of 960 keys meets 960/128 + 1 key tiles per query
  // tile, as causal attention over 2048 tokens does on average, at the
  // GB300's causal rate there (1373 forward); halfway in log2 between 128
  // and 960 (about 350), halfway between 167 and 1373 TFLOP/s.
  const auto rate = [&](double w) {
    const taskgraph::Task t = window(w, 16384, false);
    return t.flops / seconds(gb300, t);
  };
  CHECK(rate(960) == Approx(1373e12).epsilon(0.01));
  CHECK(rate(std::sqrt(128.0 * 960)) == Approx((167e12 + 1373e12) / 2).epsilon(0.01));
  // 4096 keys: causal attention over 8320 tokens, between 8k's 1856 and 16k's 1915.
  CHECK(rate(4096) == Approx(1856e12 + (1915e12 - 1856e12) * std::log2(8320.0 / 8192)).epsilon(0.01));
  // Without a measured window (the H100): causal attention over the
  // tile-equivalent length, held at the table's shortest below it
  // (FlashAttention-3 causal at 2k: 521; at 512, the window of 192: 292).
  const auto h100 = test::shipped_hardware("h100-sxm5-80gb");
  const taskgraph::Task t960 = window(960, 16384, false);
  CHECK(t960.flops / seconds(h100, t960) == Approx(521e12).epsilon(0.01));
  const taskgraph::Task t192 = window(192, 16384, false);
  CHECK(t192.flops / seconds(h100, t192) == Approx(292e12).epsilon(0.01));
}

TEST_CASE("cuDNN's fused attention runs at the profile's cuDNN efficiency, or is refused", "[cost]") {
  // FlashAttention-3's paper measures cuDNN on H100 at 595 (forward) and 516
  // (backward) of 989 TFLOP/s at 16k tokens without a mask.
  const auto h100 = test::shipped_hardware("h100-sxm5-80gb");
  taskgraph::Task t = attention_forward(16384);
  t.flags = taskgraph::kCudnn;
  const double launch = cost::launch_overhead_seconds(h100);
  CHECK(cost::compute_seconds(h100, t, cost::Load::Burst) - launch == Approx(t.flops / (989e12 * 0.60)));
  t.flags = taskgraph::kCudnn | taskgraph::kBackwardPass;
  t.flops *= 2;
  CHECK(cost::compute_seconds(h100, t, cost::Load::Burst) - launch == Approx(2.5 * 4.0 * 32 * 16384.0 * 16384 * 128 / (989e12 * 0.52)));
  // A profile without cuDNN figures says what is missing.
  const auto a100 = test::shipped_hardware("a100-sxm4-80gb");
  CHECK_THROWS_WITH(cost::compute_seconds(a100, t, cost::Load::Burst), Catch::Contains("cudnn_forward") && Catch::Contains("a100-sxm4-80gb"));
}

TEST_CASE("FlashAttention-2 runs at its own H100 figures and its own shape by length, the A100's flash", "[cost]") {
  // FlashAttention-3's paper measures FlashAttention-2 on H100 at 370
  // (forward) and 322 (backward) of 989 TFLOP/s at 16k tokens without a
  // mask; FlashAttention-2's own H100 benchmark gives forward + backward 338
  // at 16k, 308 causal at 8k and 248 without a mask at 512.
  const auto h100 = test::shipped_hardware("h100-sxm5-80gb");
  const double launch = cost::launch_overhead_seconds(h100);
  const auto burst = [&](const taskgraph::Task& t) {
    return cost::compute_seconds(h100, t, cost::Load::Burst) - launch;
  };
  taskgraph::Task t = attention_forward(16384);
  t.flags = taskgraph::kFlash2;
  CHECK(burst(t) == Approx(t.flops / 370e12).epsilon(2e-4));
  taskgraph::Task bwd = t;
  bwd.flags = taskgraph::kFlash2 | taskgraph::kBackwardPass;
  bwd.flops *= 2;
  CHECK(burst(bwd) == Approx(2.5 * 4.0 * 32 * 16384.0 * 16384 * 128 / 322e12).epsilon(2e-4));
  taskgraph::Task causal = attention_forward(8192);
  causal.flags = taskgraph::kFlash2 | taskgraph::kCausal;
  CHECK(burst(causal) == Approx(causal.flops / 2 / (370e12 * 308 / 338)).epsilon(5e-4));
  taskgraph::Task s512 = attention_forward(512);
  s512.flags = taskgraph::kFlash2;
  CHECK(burst(s512) == Approx(s512.flops / (370e12 * 248 / 338)).epsilon(5e-4));
  // On the A100 FlashAttention-2 is the flash kernel: the same time.
  const auto a100 = test::shipped_hardware("a100-sxm4-80gb");
  taskgraph::Task flash = attention_forward(4096);
  taskgraph::Task fa2 = flash;
  fa2.flags = taskgraph::kFlash2;
  CHECK(cost::compute_seconds(a100, fa2, cost::Load::Burst) == cost::compute_seconds(a100, flash, cost::Load::Burst));
  // A profile without FlashAttention-2 figures says what is missing.
  const auto b200 = test::shipped_hardware("b200-sxm-180gb");
  CHECK_THROWS_WITH(cost::compute_seconds(b200, fa2, cost::Load::Burst),
                    Catch::Contains("flash2_forward") && Catch::Contains("b200"));
}

TEST_CASE("FlashAttention's Triton kernel takes the A100 times its benchmark measured, and only there", "[cost]") {
  // FlashAttention-2's paper, Fig. 4 (A100 80GB, head dim 128), forward +
  // backward TFLOP/s of the Triton kernel: 95 at 16k without a mask, 68 at 2k
  // and 80 at 16k causal, 78 at 512 without a mask. A step's forward and
  // backward together must take the FLOP at those rates.
  const auto a100 = test::shipped_hardware("a100-sxm4-80gb");
  const double launch = cost::launch_overhead_seconds(a100);
  const auto pair = [&](std::uint32_t seq, bool causal) {
    taskgraph::Task fwd = attention_forward(seq);
    fwd.flags = taskgraph::kTriton;
    if (causal) fwd.flags |= taskgraph::kCausal;
    taskgraph::Task bwd = fwd;
    bwd.flags |= taskgraph::kBackwardPass;
    bwd.flops *= 2;
    const double executed = 3.5 * fwd.flops * (causal ? 0.5 : 1.0);
    const double s = cost::compute_seconds(a100, fwd, cost::Load::Burst) +
                     cost::compute_seconds(a100, bwd, cost::Load::Burst) - 2 * launch;
    return executed / s;  // FLOP/s over both passes
  };
  CHECK(pair(16384, false) == Approx(95e12).epsilon(1e-3));
  CHECK(pair(512, false) == Approx(78e12).epsilon(1e-3));
  CHECK(pair(2048, true) == Approx(68e12).epsilon(1e-3));
  CHECK(pair(16384, true) == Approx(80e12).epsilon(1e-3));
  // At the same length and mask it is FlashAttention-2's 189 against 80.
  taskgraph::Task fa2 = attention_forward(16384);
  fa2.flags = taskgraph::kFlash2 | taskgraph::kCausal;
  taskgraph::Task triton = fa2;
  triton.flags = taskgraph::kTriton | taskgraph::kCausal;
  CHECK(cost::compute_seconds(a100, triton, cost::Load::Burst) - launch >
        2 * (cost::compute_seconds(a100, fa2, cost::Load::Burst) - launch));
  // No Hopper measurement of it is published: refused, by name.
  const auto h100 = test::shipped_hardware("h100-sxm5-80gb");
  CHECK_THROWS_WITH(cost::compute_seconds(h100, triton, cost::Load::Burst),
                    Catch::Contains("triton_forward") && Catch::Contains("h100-sxm5-80gb"));
}

TEST_CASE("GEMM ratio interpolation is exact on the grid and monotone between", "[cost]") {
  hardware::GemmTable t;
  t.log2_m = {8, 12};
  t.log2_n = {8, 12};
  t.log2_k = {8, 12};
  // ratio grows with m only: 0.5 at m = 256, 0.9 at m = 4096.
  for (int im = 0; im < 2; ++im)
    for (int in = 0; in < 4; ++in) t.ratio.push_back(im == 0 ? 0.5 : 0.9);
  CHECK(cost::interpolate_ratio(t, 256, 256, 256) == Approx(0.5));
  CHECK(cost::interpolate_ratio(t, 4096, 4096, 4096) == Approx(0.9));
  CHECK(cost::interpolate_ratio(t, 1024, 300, 3000) == Approx(0.7));  // log2 1024 = 10: halfway
  double previous = 0;
  for (double m = 256; m <= 4096; m *= 1.1) {
    const double r = cost::interpolate_ratio(t, m, 512, 512);
    CHECK(r >= previous);
    previous = r;
  }
  CHECK(cost::interpolate_ratio(t, 16, 256, 256) == Approx(0.5));     // clamped below
  CHECK(cost::interpolate_ratio(t, 65536, 256, 256) == Approx(0.9));  // and above
}
