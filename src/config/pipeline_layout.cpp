#include "ptsim/config/pipeline_layout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <utility>

#include "ptsim/common/error.hpp"

namespace ptsim::config {

namespace {

// Longest expansion accepted: a layout names each layer once, and no model
// comes near this; the bound keeps "(t*999999|)*999999" from exhausting memory.
constexpr std::size_t kMaxExpanded = std::size_t{1} << 22;

// The count of a repeat starting at text[at] (digits; none: no repeat), and
// where it ends.
std::optional<std::pair<std::size_t, std::size_t>> repeat_count(const std::string& text, std::size_t at,
                                                                 const std::string& layout, const std::string& where) {
  std::size_t end = at;
  while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
  if (end == at) return std::nullopt;
  if (end - at > 6)
    throw ConfigError(fmt::format("{} \"{}\": the count {} is too large; a layout names each layer once", where,
                                  layout, text.substr(at, end - at)));
  return std::make_pair(static_cast<std::size_t>(std::stoul(text.substr(at, end - at))), end);
}

void append_repeated(std::string& out, const std::string& piece, std::size_t count, const std::string& layout,
                     const std::string& where) {
  if (out.size() + piece.size() * count > kMaxExpanded)
    throw ConfigError(fmt::format("{} \"{}\" expands to more than {} characters; a layout names each layer once",
                                  where, layout, kMaxExpanded));
  for (std::size_t i = 0; i < count; ++i) out += piece;
}

// Megatron-Core's first pass, re.sub(r'\(([^)]+)\)\*(\d+)', ...): from each
// '(' leftmost first, the text up to the next ')' repeated when "*n" follows.
std::string unroll_groups(const std::string& text, const std::string& layout, const std::string& where) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '(') {
      const std::size_t close = text.find(')', i + 1);
      if (close != std::string::npos && close > i + 1 && close + 1 < text.size() && text[close + 1] == '*') {
        if (const auto count = repeat_count(text, close + 2, layout, where)) {
          append_repeated(out, text.substr(i + 1, close - i - 1), count->first, layout, where);
          i = count->second;
          continue;
        }
      }
    }
    out += text[i++];
  }
  return out;
}

// The second pass, re.sub(r'(.)\*(\d+)', ...): any character followed by "*n".
std::string unroll_singles(const std::string& text, const std::string& layout, const std::string& where) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    if (i + 1 < text.size() && text[i + 1] == '*') {
      if (const auto count = repeat_count(text, i + 2, layout, where)) {
        append_repeated(out, std::string(1, text[i]), count->first, layout, where);
        i = count->second;
        continue;
      }
    }
    out += text[i++];
  }
  return out;
}

}  // namespace

std::vector<std::string> expand_pipeline_layout(const std::string& layout, const std::string& where) {
  std::string text;
  for (const char ch : layout)
    if (ch != ',' && !std::isspace(static_cast<unsigned char>(ch))) text += ch;
  if (text.empty()) throw ConfigError(fmt::format("{} is empty; give stages such as \"Et*4|t*4|t*4|t*4L\"", where));
  const std::string expanded = unroll_singles(unroll_groups(text, layout, where), layout, where);
  std::vector<std::string> stages(1);
  for (std::size_t i = 0; i < expanded.size(); ++i) {
    const char ch = expanded[i];
    if (ch == '|') {
      stages.emplace_back();
    } else if (ch == 'E' || ch == 't' || ch == 'L' || ch == 'm') {
      stages.back() += ch;
    } else {
      throw ConfigError(fmt::format(
          "{} \"{}\": '{}' (in \"{}\" once groups and counts are unrolled, position {}) is not a layer; "
          "use E (embedding), t (transformer layer), L (loss), m (MTP layer), | between stages, "
          "x*n and (...)*n for repeats",
          where, layout, ch, expanded, i + 1));
    }
  }
  return stages;
}

std::vector<std::int64_t> pipeline_layout_layers(const std::string& layout, std::int64_t num_layers, std::int64_t pp,
                                                 std::int64_t mtp_layers, const std::string& where) {
  const std::vector<std::string> stages = expand_pipeline_layout(layout, where);
  const auto n = static_cast<std::int64_t>(stages.size());
  const auto fail = [&](const std::string& rule, const std::string& fix) {
    throw ConfigError(fmt::format("{} \"{}\" {}; {}", where, layout, rule, fix));
  };
  if (n % pp != 0)
    fail(fmt::format("has {} virtual stages, not a multiple of pp = {}", n, pp),
         "give pp·vpp stages separated by |");
  std::string all;
  for (const auto& s : stages) all += s;
  const auto count = [&](char ch) { return std::count(all.begin(), all.end(), ch); };
  if (count('m') != mtp_layers)
    fail(fmt::format("places {} MTP layers (m) where the model has mtp_num_layers = {}", count('m'), mtp_layers),
         "name each MTP depth once, with the loss");
  if (mtp_layers > 0 && stages.back().find('m') == std::string::npos)
    fail("places the MTP layers (m) away from the loss, which ptsim runs with them on the last virtual stage",
         "put them in the last stage, before L");
  if (count('E') != 1 || all.front() != 'E')
    fail("must begin with the embedding, E, and name it once", "start the first stage with E");
  if (count('L') != 1 || all.back() != 'L')
    fail("must end with the loss, L, and name it once", "end the last stage with L");
  if (count('t') != num_layers)
    fail(fmt::format("places {} transformer layers where the model has num_layers = {}", count('t'), num_layers),
         "name every layer once");
  std::vector<std::int64_t> layers;
  for (std::int64_t v = 0; v < n; ++v) {
    const auto& s = stages[static_cast<std::size_t>(v)];
    const auto t = static_cast<std::int64_t>(std::count(s.begin(), s.end(), 't'));
    // The embedding or the loss alone is a stage Megatron-Core builds (and
    // its --account-for-*-in-pipeline-split make); a stage of nothing is not.
    if (t == 0 && s.find_first_of("EL") == std::string::npos)
      fail(fmt::format("leaves virtual stage {} (\"{}\") without a transformer layer, the embedding or the "
                       "loss",
                       v, s),
           "give it a layer, or drop the stage");
    layers.push_back(t);
  }
  return layers;
}

}  // namespace ptsim::config
