// Search progress on standard error (see search_progress.hpp).
#include "search_progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <utility>

namespace ptsim::cli {

namespace {

// A line on a log every few seconds: often enough to see a job alive, rarely
// enough not to flood it.
constexpr std::chrono::seconds kLogInterval{5};
// A terminal's bar at most ten times a second.
constexpr std::chrono::milliseconds kRedrawInterval{100};

}  // namespace

std::string progress_text(const plan::SearchProgress& p) {
  std::string text = fmt::format("{} simulated in {:.1f} s", p.simulated, p.elapsed_s);
  if (p.best_step_s) text += fmt::format(", best step {:.3f} s", *p.best_step_s);
  text += fmt::format(", at most {} left", p.at_most_left);
  // The time left at the pace so far, with the count that only falls.
  if (p.simulated > 0 && p.at_most_left > 0)
    text += fmt::format(" (about {:.0f} s)", p.elapsed_s / static_cast<double>(p.simulated) *
                                                 static_cast<double>(p.at_most_left));
  return text;
}

SearchProgressReporter::SearchProgressReporter(std::string what, bool on)
    : what_(std::move(what)), on_(on), terminal_(isatty(STDERR_FILENO) != 0), last_(std::chrono::steady_clock::now()) {}

SearchProgressReporter::~SearchProgressReporter() {
  if (on_ && terminal_ && drawn_) fmt::print(stderr, "\r{:100}\r", "");
}

void SearchProgressReporter::update(const plan::SearchProgress& p) {
  if (!on_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < (terminal_ ? std::chrono::duration_cast<std::chrono::milliseconds>(kRedrawInterval)
                               : std::chrono::duration_cast<std::chrono::milliseconds>(kLogInterval)))
    return;
  last_ = now;
  if (terminal_) {
    fmt::print(stderr, "\r{:<110}", fmt::format("{}: {}", what_, progress_text(p)));
    drawn_ = true;
  } else {
    fmt::print(stderr, "{}: {}\n", what_, progress_text(p));
  }
  std::fflush(stderr);
}

}  // namespace ptsim::cli
