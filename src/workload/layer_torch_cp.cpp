// Context parallelism as PyTorch runs it (torch.distributed.tensor.
// experimental.context_parallel, which torchtitan's --experimental.
// context_parallel_degree turns on): attention's ops when the layers are
// torchtitan's modules and cp > 1. Read in _attention.py
// (_templated_ring_attention and its backward, _SDPAMerger, _AllGatherRotater,
// _AllToAllRotater; the stored version of pytorch/pytorch at 0123248a4 — the
// algorithm torchtitan 9dec370's benchmark ran: the same load balancing,
// rotaters and fp32 merges; torchtitan's config there defaults to allgather).
//
// What it does, per layer and pass, on a rank holding chunks i and 2·cp−1−i
// of each sequence (c = s/cp queries, all heads — torchtitan expands grouped
// keys and values before attention, so they travel expanded):
// - keys and values made contiguous and concatenated into one flat buffer;
//   `allgather`: one all-gather of those buffers over the CP group, issued
//   before the first block and waited for by the second; `alltoall`: the
//   buffer sent to the next rank before each step but the last;
// - cp calls of the SDPA kernel (FlashAttention-2's, torchtitan's): step 0
//   the two local chunks against themselves, causal; every other step half
//   a c×c block without a mask (all c queries against the first half of the
//   block, or the second half of the queries against all of it);
// - each partial output converted to fp32 and merged into the running one by
//   log-sum-exp (out − sigmoid(lse_b − lse)·(out − out_b)), the result cast
//   back to bf16;
// - backward: gradient accumulators zeroed in fp32, keys and values gathered
//   again, the SDPA backward of each step, and the key/value gradients, fp32,
//   passed round the ring whatever the rotate method (an all-to-all to the
//   next rank after every step, each waited for before the next step's
//   gradients are added in).
//
// Ranks do different merges: on rank cp−1 every later step is "i ≤ rank",
// whole-output merges and half-block gradient updates; on rank 0 every one
// updates half the output and re-concatenates it. Every rank's step waits
// for the ring, so the ops here are the costliest rank's, cp−1's.
//
// Eager (--kernel-fusion eager) each ATen op is a kernel; compiled, the
// ring is traced into the block's graph (AOTAutograd desugars DTensor's
// dispatch, the functional collectives included) and Inductor fuses each
// chain of pointwise ops between SDPA calls into one kernel. Not modelled:
// the log-sum-exp's own merge arithmetic (1/d of the output's bytes) and the
// transient buffers (gathered keys and values, fp32 accumulators) in memory.
#include "internal/layer_builder.hpp"

namespace ptsim::workload::internal {

namespace {

// Bytes a merge of step `step` (1 … cp−1) moves per element of the local
// output. Eager: the partial output to fp32 (read 2, write 4), out − out_b
// (8, 4), its product with the sigmoid (4, 4), out minus that (8, 4).
// Compiled: one kernel reading the running output (bf16 before the first
// merge, the fp32 one after) and the partial one, writing the running one
// (bf16 after the last merge, the cast folded in).
double merge_bytes(bool eager, std::int64_t step, std::int64_t cp) {
  if (eager) return 6 + 12 + 8 + 12;
  return (step == 1 ? 2.0 : 4.0) + 2 + (step == cp - 1 ? 2.0 : 4.0);
}

}  // namespace

void LayerBuilder::torch_context_parallel_attention(double bh, double qk_d, double v_d, double kv_ratio, double saved,
                                                    double kept) {
  const std::int64_t cp = shape_.cp;
  const bool gather = shape_.cp_rotate_method == strategy::CpRotateMethod::AllGather;
  const double c = static_cast<double>(shape_.seq_length) / static_cast<double>(cp);
  const double q_el = bh * c * qk_d, o_el = bh * c * v_d;
  const double kv_el = bh * c * kv_ratio * (qk_d + v_d);
  const double kv_bytes = 2 * kv_el;  // one rank's keys and values, bf16
  // Keys and values into one flat buffer: eager, .contiguous() of each
  // (read 2, write 2) then torch.cat (2, 2); compiled, one kernel writing
  // both the contiguous tensors and the buffer.
  const double pack_bytes = (eager_ ? 8 : 6) * kv_el;
  // A transfer to the next rank of the CP ring after op `after`, its
  // receive consumed by the op that names it.
  const auto pass_on = [](std::vector<OpSpec>& ops, const std::string& name, double bytes, int after) {
    return push_cp_transfer(ops, name + "_send", name + "_recv", bytes, after, true);
  };
  const auto last = [](const std::vector<OpSpec>& ops) { return static_cast<int>(ops.size()) - 1; };
  // The keys and values every step > 0 waits for: the all-gather, or the
  // block received from the step before. Emits the transfers `step` starts.
  const auto rotate = [&](std::vector<OpSpec>& ops, const std::string& prefix, std::int64_t step, int& arrived) {
    if (gather) {
      if (step > 0) return;
      ops.push_back(memory_op(prefix + ".kv_pack", pack_bytes));
      OpSpec all = collective_op(prefix + ".kv_allgather", CollectiveKind::AllGather, CommGroup::ContextParallel,
                                 static_cast<double>(cp) * kv_bytes);
      all.detached = true;
      ops.push_back(all);
      arrived = last(ops);
      return;
    }
    if (step + 1 >= cp) return;
    // The received block's keys and values are views of its buffer: only the cat copies.
    OpSpec pack = memory_op(fmt_step(prefix + ".kv_pack", step), step == 0 ? pack_bytes : 4 * kv_el);
    pack.after = arrived;
    ops.push_back(pack);
    arrived = pass_on(ops, fmt_step(prefix + ".kv", step), kv_bytes, last(ops));
  };
  // Step `step`'s attention kernel after the transfers it starts, waiting
  // for the keys and values it reads (step 0: the local chunks, causal;
  // later steps half a c×c block, unmasked).
  const auto attend = [&](std::vector<OpSpec>& ops, const std::string& prefix, std::int64_t step, bool backward_pass,
                          int& arrived) {
    const int waits_for = arrived;
    rotate(ops, prefix, step, arrived);
    ops.push_back(
        step == 0 ? fused_attention(fmt_step(prefix, 0), bh, c, c, qk_d, v_d, kv_ratio, true, backward_pass)
                  : fused_attention(fmt_step(prefix, step), bh, c, c / 2, qk_d, v_d, kv_ratio, false, backward_pass));
    if (step > 0) ops.back().after = waits_for;
  };

  std::vector<OpSpec> fw;
  int kv_arrived = -1;
  for (std::int64_t j = 0; j < cp; ++j) {
    attend(fw, "attn.cp", j, false, kv_arrived);
    if (j == 0) {
      if (eager_) fw.push_back(memory_op("attn.cp.out_fp32", 6 * o_el));
    } else {
      fw.push_back(memory_op(fmt_step("attn.cp.merge", j), merge_bytes(eager_, j, cp) * o_el));
    }
  }
  if (eager_) fw.push_back(memory_op("attn.cp.out_cast", 6 * o_el));
  fw.back().saved_bytes = as_bytes(saved);
  for (std::size_t i = 0; i < fw.size(); ++i) fw[i] = core_attention_op(fw[i], i + 1 == fw.size() ? kept : 0);
  append_block(fw_, fw);

  std::vector<OpSpec> bw;
  // zeros_like in fp32 of the query, key and value gradients (compiled,
  // folded into the first additions).
  if (eager_) bw.push_back(memory_op("attn.cp.bwd.zeros", 4 * (q_el + kv_el)));
  kv_arrived = -1;
  int dkv_arrived = -1;
  for (std::int64_t j = 0; j < cp; ++j) {
    attend(bw, "attn.cp.bwd", j, true, kv_arrived);
    // The key/value gradients: step 0's added to the zeroed accumulators
    // (fp32 += bf16: read 4 + 2, write 4); later ones the received
    // accumulators with this step's half-block gradients added to their
    // first half (chunk += new: 5 an element of the whole) and re-
    // concatenated (torch.cat: 4, 4), then all of it concatenated flat for
    // the transfer (4, 4). Compiled: one kernel per step writing the buffer.
    const double update = j == 0 ? (eager_ ? 10 : 6) : (eager_ ? 5 + 8 : 4 + 1 + 4);
    OpSpec add = memory_op(fmt_step("attn.cp.bwd.dkv_add", j), update * kv_el);
    if (j > 0) add.after = dkv_arrived;
    bw.push_back(add);
    if (eager_) bw.push_back(memory_op(fmt_step("attn.cp.bwd.dkv_pack", j), 8 * kv_el));
    dkv_arrived = pass_on(bw, fmt_step("attn.cp.bwd.dkv", j), 4 * kv_el, last(bw));
    // grad_query += the step's (read 4 + 2, write 4); compiled, the first
    // writes the accumulator and the last writes bf16, the cast folded in.
    const double dq = eager_ ? 10 : (j == 0 ? 6 : 4 + 2 + (j == cp - 1 ? 2 : 4));
    bw.push_back(memory_op(fmt_step("attn.cp.bwd.dq_add", j), dq * q_el));
  }
  if (eager_) bw.push_back(memory_op("attn.cp.bwd.dq_cast", 6 * q_el));
  // The last transfer brings this rank's own key/value gradients home, cast to bf16.
  OpSpec cast = memory_op("attn.cp.bwd.dkv_cast", 6 * kv_el);
  cast.after = dkv_arrived;
  bw.push_back(cast);
  bw.back().freed_bytes = as_bytes(saved);
  backward(std::move(bw));
}

}  // namespace ptsim::workload::internal
