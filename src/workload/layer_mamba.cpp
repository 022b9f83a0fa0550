// A hybrid model's Mamba-2 layer (see internal/layer_builder.hpp and
// layer_ops.cpp's header), as Megatron-Core trains it: MambaLayer around
// MambaMixer (megatron/core/ssm/mamba_layer.py, mamba_mixer.py at
// d98e8a64dd), whose training path is mamba_ssm's memory-efficient
// mamba_split_conv1d_scan_combined (mamba_ssm/ops/triton/ssd_combined.py at
// e9594ce): the causal depthwise convolution (causal_conv1d) and the chunked
// state-space-duality (SSD) scan of Dao & Gu 2024 (arXiv 2405.21060, §6), one
// kernel per step of the algorithm.
//
// Per rank (TP t splits the heads and the groups): N tokens of b sequences
// of s, H/t heads of P channels, G/t groups of state N_s, chunks of Q = 128
// tokens; the SSD's batched products run over b·⌈s/Q⌉ chunks times the
// local heads (or groups, for C·Bᵀ), each a small tile-sized GEMM:
//   chunk_state   states = Bᵀ·x per chunk            N_s × P, k = Q   (fp32 out)
//   state_passing the states carried across chunks  memory-bound, fp32
//   bmm_chunk     C·Bᵀ per chunk and group            Q × Q,  k = N_s  (fp32 out)
//   chunk_scan    y = C·states + (C·Bᵀ ∘ L)·x, ·silu(z)  Q × P,  k = N_s + Q
// The backward recomputes the convolution, C·Bᵀ, the states and their
// passing (the memory-efficient path keeps only its input and y), then runs
// one kernel per gradient (_mamba_chunk_scan_combined_bwd): dz, dstates,
// state passing backward, dx, dB, dC, d(C·Bᵀ), the two C·Bᵀ products back to
// B and C, ddA, the cumulative-sum backward, and the convolution's backward.
// Each SSD kernel is a KernelClass::StateSpaceScan task carrying the bytes
// it moves and the FLOPs of its products: the cost model prices those bytes
// at HBM's rate or those FLOPs at the SMs' issue rate, whichever is slower,
// the gradient kernels at the backward's rate and the recomputed ones at the
// forward's (one measured forward and backward on an H100 sets the two:
// cost/compute_cost.hpp, kSsdScanForwardFlopsPerSmCycle, and
// docs/model-sources.md).
#include "internal/layer_builder.hpp"

namespace ptsim::workload::internal {

namespace {

// One SSD kernel: its products' FLOPs, which measure its work at the SMs
// (see the header), and its bytes, which bound it at HBM. Every SSD step
// moves fp32 states (P·N_s a head and chunk) or fp32 C·Bᵀ blocks, and its
// products are tile-sized (m, n ≤ 128, k ≤ 256). B, C and C·Bᵀ are read
// once a group, the heads of a group sharing them through L2 (the kernels'
// grids put a chunk's heads side by side). A gradient kernel carries the
// backward's flag, which prices it at the backward's rate.
OpSpec ssd_kernel(const std::string& name, double flops, double bytes, bool gradient = false) {
  OpSpec op = memory_op(name, bytes, KernelClass::StateSpaceScan);
  op.flops = flops;
  if (gradient) op.flags = taskgraph::kBackwardPass;
  return op;
}

}  // namespace

void LayerBuilder::mamba() {
  const double t = t_;
  const double H = static_cast<double>(m_.mamba_num_heads) / t;
  const double G = static_cast<double>(m_.mamba_num_groups) / t;
  const double P = static_cast<double>(m_.mamba_head_dim);
  const double Ns = static_cast<double>(m_.mamba_state_dim);
  const double Q = static_cast<double>(m_.mamba_chunk_size);
  const double inner = static_cast<double>(m_.mamba_inner()) / t;
  const double in_proj = static_cast<double>(m_.mamba_in_proj_width()) / t;
  const double conv = static_cast<double>(m_.mamba_conv_channels()) / t;
  const double chunks = static_cast<double>(shape_.micro_batch) * std::ceil(static_cast<double>(shape_.seq_length) / Q);
  // Bytes of the tensors the SSD kernels read and write: x, z, y and their
  // gradients (bf16, d_inner a token); B or C (bf16, G·N_s a token); dt
  // and the cumulative decay (fp32, a head a token); the chunk states
  // (fp32); the C·Bᵀ blocks (fp32, one a chunk and group).
  const double X = 2 * N_ * inner, BC = 2 * N_ * G * Ns, DT = 4 * N_ * H;
  const double S = 4 * chunks * H * P * Ns, CB = 4 * chunks * G * Q * Q;
  // FLOPs of the products over all chunks: Bᵀ·x (states), C·Bᵀ, C·states,
  // (C·Bᵀ∘L)·x.
  const double state_flops = 2 * chunks * H * Q * P * Ns;
  const double cb_flops = 2 * chunks * G * Q * Q * Ns;
  const double diag_flops = 2 * chunks * H * Q * Q * P;

  // The pre-norm fused into the input projection (TELayerNormColumnParallelLinear).
  norm("mamba.norm", true);
  enter_tp_region("mamba.input", true, true);
  column("mamba.in_proj", N_, h_, static_cast<double>(m_.mamba_in_proj_width()), Nsp_ * h_, true, true, true, false);
  // zxBCdt from (s, b, ·) to (b, s, ·), contiguous: the copy the SSD keeps.
  fw_.push_back(saving(memory_op("mamba.in_proj.transpose", 4 * N_ * in_proj), 2 * N_ * in_proj));
  backward({freeing(memory_op("mamba.in_proj.transpose.bwd", 4 * N_ * in_proj), 2 * N_ * in_proj)});

  // Forward: the convolution over x, B and C (SiLU fused), dt's softplus
  // and the cumulative decay, then the SSD's steps; y before its gate
  // (out_x) is kept for the backward.
  const OpSpec conv1d = memory_op("mamba.conv1d", 4 * N_ * conv);
  const OpSpec cumsum = ssd_kernel("mamba.ssd.chunk_cumsum", 0, N_ * H * 10);
  const OpSpec chunk_state = ssd_kernel("mamba.ssd.chunk_state", state_flops, X + BC + 2 * DT + S);
  const OpSpec state_passing = ssd_kernel("mamba.ssd.state_passing", 0, 2 * S);
  const OpSpec bmm_chunk = ssd_kernel("mamba.ssd.bmm_chunk", cb_flops, 2 * BC + CB);
  fw_.insert(fw_.end(), {conv1d, cumsum, chunk_state, state_passing, bmm_chunk});
  fw_.push_back(saving(ssd_kernel("mamba.ssd.chunk_scan", state_flops + diag_flops, CB + 4 * X + BC + S + 2 * DT),
                       2 * N_ * inner));
  const auto again = [](OpSpec op) {
    op.name += ".recompute";
    return op;
  };
  backward({
      again(conv1d),
      again(cumsum),
      again(bmm_chunk),
      again(chunk_state),
      again(state_passing),
      // dz and the gated gradient: read dout, out_x and z; write dz and dout·silu(z).
      ssd_kernel("mamba.ssd.bwd_dz", 0, 5 * X, true),
      ssd_kernel("mamba.ssd.bwd_dstates", state_flops, BC + X + DT + S, true),
      ssd_kernel("mamba.ssd.state_passing.bwd", 0, 3 * S, true),
      ssd_kernel("mamba.ssd.bwd_dx", state_flops + diag_flops, 3 * X + CB + S + BC + 3 * DT, true),
      ssd_kernel("mamba.ssd.bwd_db", state_flops, X + S + 3 * BC + 2 * DT, true),
      ssd_kernel("mamba.ssd.bwd_dc", state_flops, X + S + 3 * BC + DT, true),
      ssd_kernel("mamba.ssd.bwd_dcb", diag_flops, 2 * X + 2 * DT + CB, true),
      ssd_kernel("mamba.ssd.bmm_chunk.bwd_b", cb_flops, 5 * BC + CB, true),
      ssd_kernel("mamba.ssd.bmm_chunk.bwd_c", cb_flops, 5 * BC + CB, true),
      ssd_kernel("mamba.ssd.bwd_ddacs", diag_flops, 2 * X + CB + 3 * DT, true),
      ssd_kernel("mamba.ssd.chunk_cumsum.bwd", 0, N_ * H * 14, true),
      // Read x, B, C and their gradient; write the input's gradient.
      freeing(memory_op("mamba.conv1d.bwd", 6 * N_ * conv), 2 * N_ * inner),
  });

  // y back to (s, b, ·), then the grouped RMSNorm (RMSNormGated without its
  // gate, group_size d_inner/G), which keeps its input.
  fw_.push_back(memory_op("mamba.y.transpose", 4 * N_ * inner));
  backward({memory_op("mamba.y.transpose.bwd", 4 * N_ * inner)});
  fw_.push_back(saving(memory_op("mamba.gated_norm", 4 * N_ * inner, KernelClass::Norm), 2 * N_ * inner));
  backward({freeing(memory_op("mamba.gated_norm.bwd", 6 * N_ * inner, KernelClass::Norm), 2 * N_ * inner)});
  in_format(strategy::LinearModule::MambaOutProj,
            [&] { row("mamba.out_proj", N_, static_cast<double>(m_.mamba_inner()), h_); });
}

}  // namespace ptsim::workload::internal
