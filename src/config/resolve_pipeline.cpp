// The pipeline of a run: its stages, virtual stages and their layers, and
// its schedule with the schedule's rules (see internal/run_checker.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <variant>

#include "internal/run_checker.hpp"
#include "ptsim/config/pipeline_layout.hpp"
#include "ptsim/strategy/stage_partition.hpp"

namespace ptsim::config::internal {

namespace {

// The schedule a strategy names; the readers admit only the registered
// names, so an unknown one here is ptsim's bug, not the user's.
const strategy::ScheduleDescriptor& schedule_of(const std::string& s) {
  const strategy::ScheduleDescriptor* d = strategy::find_schedule(s);
  PTSIM_ASSERT(d != nullptr, "a schedule name the strategy readers did not check");
  return *d;
}

// Megatron-Core's --account-for-embedding-in-pipeline-split and
// --account-for-loss-in-pipeline-split (transformer_block.py,
// get_num_layers_to_build): num_layers plus one for each, split evenly over
// the pp·vpp virtual stages, the embedding taking one of the first virtual
// stage's places and the loss one of the last's; a first or last virtual
// stage may so hold the embedding or the loss alone. Megatron asserts the
// divisions; so does ptsim.
std::vector<std::int64_t> accounted_split(const Checker& check, std::int64_t num_layers, std::int64_t pp,
                                          std::int64_t vpp, bool embedding, bool loss) {
  const std::int64_t counted = num_layers + (embedding ? 1 : 0) + (loss ? 1 : 0);
  const char* field = embedding ? "account_for_embedding" : "account_for_loss";
  const std::string what = fmt::format("num_layers = {}{}{}, {} places", num_layers,
                                       embedding ? " + 1 (embedding)" : "", loss ? " + 1 (loss)" : "", counted);
  if (counted % pp != 0)
    check.fail_flag(field, fmt::format("splits {}, which pp = {} does not divide", what, pp),
                    fmt::format("choose pp among {}, or drop the flag", divisors_hint(counted)));
  if ((counted / pp) % vpp != 0)
    check.fail_flag(field,
                    fmt::format("leaves {} places a stage ({} over pp = {}), which vpp = {} does not divide",
                                counted / pp, what, pp, vpp),
                    fmt::format("choose vpp among {}", divisors_hint(counted / pp)));
  std::vector<std::int64_t> layers(static_cast<std::size_t>(pp * vpp), counted / (pp * vpp));
  if (embedding) --layers.front();
  if (loss) --layers.back();
  return layers;
}

}  // namespace

void check_pipeline(const Checker& check, const model::ModelSpec& m, strategy::ParallelConfig& c,
                    const StrategyInput& s) {
  const std::int64_t L = m.num_layers;
  const bool embedding_placed = s.account_for_embedding.value_or(false);
  const bool loss_placed = s.account_for_loss.value_or(false);
  const bool accounted = embedding_placed || loss_placed;
  // The places split over the stages: the layers, and the embedding and the
  // loss where they take a layer's place.
  const std::int64_t places = L + (embedding_placed ? 1 : 0) + (loss_placed ? 1 : 0);
  const std::string places_text =
      accounted ? fmt::format("num_layers + embedding/loss places = {}", places) : fmt::format("num_layers = {}", L);
  c.vpp = check.bounded(s.vpp, 1, "vpp", 1 << 16);
  if (s.layers_per_virtual_stage) {
    const std::int64_t n = *s.layers_per_virtual_stage;
    if (c.pp == 1) check.fail("layers_per_virtual_stage", n, "needs pipeline parallelism", "set --pp > 1");
    if (places % c.pp != 0)
      check.fail("layers_per_virtual_stage", n,
                 fmt::format("needs stages of equal size, but pp = {} does not divide {}", c.pp, places_text),
                 "give --virtual-pipeline-model-parallel-size instead, which splits the layers as evenly as possible");
    if (places % (c.pp * n) != 0)
      check.fail("layers_per_virtual_stage", n,
                 fmt::format("must divide the layers of a stage evenly: {} over pp = {}", places_text, c.pp),
                 fmt::format("choose one of {}", divisors_hint(places / c.pp)));
    const std::int64_t vpp = places / (c.pp * n);
    if (s.vpp && *s.vpp != vpp)
      check.fail("vpp", *s.vpp,
                 fmt::format("contradicts --num-layers-per-virtual-pipeline-stage {} (which gives {})", n, vpp),
                 "give one of the two");
    c.vpp = vpp;
  }
  std::vector<std::int64_t> layout_layers;
  if (s.pipeline_layout) {
    const std::string& layout = *s.pipeline_layout;
    if (c.pp == 1) check.fail("pipeline_layout", layout, "needs pipeline parallelism", "set --pp > 1");
    if (s.layers_per_virtual_stage || s.first_stage_layers || s.last_stage_layers || accounted) {
      const char* other = s.layers_per_virtual_stage ? "layers_per_virtual_stage"
                          : s.first_stage_layers     ? "first_stage_layers"
                          : s.last_stage_layers      ? "last_stage_layers"
                          : embedding_placed         ? "account_for_embedding"
                                                     : "account_for_loss";
      check.fail("pipeline_layout", layout,
                 fmt::format("places every layer, so {} cannot also be given", s.where(other)), "give one of the two");
    }
    layout_layers = pipeline_layout_layers(layout, L, c.pp, m.mtp_num_layers, s.where("pipeline_layout"));
    const auto vpp = static_cast<std::int64_t>(layout_layers.size()) / c.pp;
    if (s.vpp && *s.vpp != vpp)
      check.fail("vpp", *s.vpp,
                 fmt::format("contradicts --pipeline-model-parallel-layout, whose {} stages over pp = {} give {}",
                             layout_layers.size(), c.pp, vpp),
                 "give one of the two");
    c.vpp = vpp;
  }
  const std::string schedule = s.schedule.value_or(std::string(strategy::to_string(strategy::default_schedule(c.vpp))));
  const strategy::ScheduleDescriptor& described = schedule_of(schedule);
  c.schedule = described.kind;
  if (c.vpp > 1 && c.pp == 1)
    check.fail("vpp", c.vpp, "needs pipeline parallelism (model chunks are spread over pipeline stages)",
               "set --pp > 1 or drop --vpp");
  if (c.vpp > 1 && !described.chunks_from_vpp)
    check.fail("schedule", schedule, fmt::format("cannot run vpp = {} model chunks per stage", c.vpp),
               "use --schedule interleaved or drop --vpp");
  strategy::ScheduleShape shape;
  shape.pp = c.pp;
  shape.vpp = c.vpp;
  enforce(check, described.check_pipeline(shape));
  if ((s.first_stage_layers || s.last_stage_layers) && c.pp == 1)
    check.fail(s.first_stage_layers ? "first_stage_layers" : "last_stage_layers",
               s.first_stage_layers.value_or(s.last_stage_layers.value_or(0)), "needs pipeline parallelism",
               "set --pp > 1");
  if ((s.first_stage_layers || s.last_stage_layers) && c.vpp > 1)
    check.fail(s.first_stage_layers ? "first_stage_layers" : "last_stage_layers",
               s.first_stage_layers.value_or(s.last_stage_layers.value_or(0)),
               "cannot be combined with the interleaved schedule's equal model chunks", "drop it or --vpp");
  if (accounted && (s.first_stage_layers || s.last_stage_layers))
    check.fail_flag(embedding_placed ? "account_for_embedding" : "account_for_loss",
                    fmt::format("cannot be combined with {}, which fixes the stage's layers itself (Megatron-Core "
                                "refuses the pair too)",
                                s.where(s.first_stage_layers ? "first_stage_layers" : "last_stage_layers")),
                    "give one of the two");
  if (accounted && described.two_directions)
    check.fail_flag(embedding_placed ? "account_for_embedding" : "account_for_loss",
                    "is Megatron-Core's split, which DualPipe's two chunks per stage do not follow",
                    "drop it (ptsim splits DualPipe's layers evenly) or use another schedule");
  const std::int64_t virtual_stages = c.pp * c.vpp;
  if (!accounted && virtual_stages > L)
    check.fail(c.vpp > 1 ? "vpp" : "pp", c.vpp > 1 ? c.vpp : c.pp,
               fmt::format("makes {} virtual stages, more than num_layers = {} (model {}): every stage needs a layer",
                           virtual_stages, L, m.name),
               "use fewer pipeline stages or chunks");
  if (s.first_stage_layers || s.last_stage_layers) {
    const std::int64_t fixed = s.first_stage_layers.value_or(0) + s.last_stage_layers.value_or(0);
    const std::int64_t rest = c.pp - (s.first_stage_layers ? 1 : 0) - (s.last_stage_layers ? 1 : 0);
    if (L - fixed < rest || (rest == 0 && L != fixed))
      check.fail(s.first_stage_layers ? "first_stage_layers" : "last_stage_layers", fixed,
                 L < fixed
                     ? fmt::format("makes the first and last stages take {} layers, more than num_layers = {}", fixed,
                                   L)
                     : fmt::format("leaves {} layers for the other {} stages of num_layers = {}", L - fixed, rest, L),
                 rest == 0 ? "make the first and last stages hold every layer"
                           : "give the first/last stage fewer layers");
  }
  if (!layout_layers.empty() && described.two_directions)
    check.fail("pipeline_layout", *s.pipeline_layout, "cannot place DualPipe's two chunks per stage",
               "drop it (ptsim splits DualPipe's layers evenly) or use another schedule");
  if (accounted) {
    c.virtual_stage_layers = accounted_split(check, L, c.pp, c.vpp, embedding_placed, loss_placed);
  } else {
    c.virtual_stage_layers = layout_layers.empty()
                                 ? strategy::split_layers(L, virtual_stages, s.first_stage_layers, s.last_stage_layers)
                                 : layout_layers;
  }
}

}  // namespace ptsim::config::internal
