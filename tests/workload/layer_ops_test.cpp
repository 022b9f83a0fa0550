// The op lists of one transformer layer: the order constraints they carry.
#include "ptsim/workload/layer_ops.hpp"

#include <string>

#include "test_support.hpp"

using namespace ptsim;

namespace {

// "attn.ring.kv_send.step2" -> "attn.ring.kv_recv.step1": the block a ring
// step forwards is the one it received the step before.
std::string previous_receive(const std::string& send) {
  const auto at = send.find("kv_send.step");
  const int step = std::stoi(send.substr(at + 12));
  return send.substr(0, at) + "kv_recv.step" + std::to_string(step - 1);
}

void check_ring_sends(const std::vector<workload::OpSpec>& ops, int expected_forwarding_sends) {
  int forwarding = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const auto& op = ops[i];
    INFO(i << " " << op.name << " after " << op.after);
    if (op.after >= 0) REQUIRE(static_cast<std::size_t>(op.after) < i);  // waits for an earlier op
    if (op.name.find("kv_send.step") == std::string::npos || op.name.find("kv_send.step0") != std::string::npos)
      continue;
    REQUIRE(op.after >= 0);
    CHECK(ops[static_cast<std::size_t>(op.after)].name == previous_receive(op.name));
    ++forwarding;
  }
  CHECK(forwarding == expected_forwarding_sends);
}

}  // namespace

TEST_CASE("Ring attention forwards the key/value block it received, forward and backward", "[workload]") {
  // Llama 3 8B (RoPE, GQA, SwiGLU): ops before the ring in both passes, so an
  // index counted from the ring's own first op would point elsewhere.
  const auto m = test::shipped_model("llama3-8b");
  workload::MicroShape s;
  s.seq_length = m.seq_length;
  s.tp = 2;
  s.sequence_parallel = true;
  for (const std::int64_t cp : {2, 4, 8}) {
    INFO("cp " << cp);
    s.cp = cp;
    const auto ops = workload::transformer_layer_ops(m, s, 0);
    // cp steps, cp - 1 sends; all but the first forward a received block.
    check_ring_sends(ops.forward, static_cast<int>(cp) - 2);
    check_ring_sends(ops.backward, static_cast<int>(cp) - 2);
  }
}
