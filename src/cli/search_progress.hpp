// Progress of a strategy search on standard error, for `plan`, `sweep` and
// `report`: a bar redrawn in place on a terminal; elsewhere (a CI log, a
// batch job's output) a line every few seconds. Both say what was simulated,
// the best step so far and how much is left at most, from the pruning bound.
#pragma once

#include <chrono>
#include <string>

#include "ptsim/plan/planner.hpp"

namespace ptsim::cli {

class SearchProgressReporter {
 public:
  /// `what` prefixes each line ("ptsim plan", "512 × dgx-a100-superpod");
  /// `on` false (--quiet) prints nothing.
  SearchProgressReporter(std::string what, bool on);
  ~SearchProgressReporter();
  SearchProgressReporter(const SearchProgressReporter&) = delete;
  SearchProgressReporter& operator=(const SearchProgressReporter&) = delete;

  void update(const plan::SearchProgress& p);
  plan::Progress callback() {
    return [this](const plan::SearchProgress& p) { update(p); };
  }

 private:
  std::string what_;
  bool on_;
  bool terminal_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_;
};

/// "120 simulated in 12.3 s, best step 7.249 s, at most 180 left (about 18 s)".
std::string progress_text(const plan::SearchProgress& p);

}  // namespace ptsim::cli
