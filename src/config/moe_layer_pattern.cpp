// Megatron-LM's --moe-layer-freq (see internal/moe_layer_pattern.hpp).
//
//   expr := term ('+' term)*
//   term := atom ('*' count)*
//   atom := '[' (digit (',' digit)*)? ']' | '(' expr ')'
#include "internal/moe_layer_pattern.hpp"

#include <fmt/format.h>

#include <cctype>
#include <optional>

#include "internal/megatron_launch_flags.hpp"
#include "ptsim/common/error.hpp"
#include "ptsim/common/parse_number.hpp"

namespace ptsim::config::internal {

namespace {

constexpr std::size_t kMaxEntries = 1 << 20;
constexpr int kMaxDepth = 64;  // nested parentheses: the parser recurses once a level

class PatternParser {
 public:
  explicit PatternParser(const std::string& text) : text_(text) {}

  std::vector<int> parse() {
    std::vector<int> out = expr();
    skip_spaces();
    if (pos_ != text_.size()) fail(fmt::format("unexpected '{}' at character {}", text_[pos_], pos_ + 1));
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigError(
        fmt::format("{}: --moe-layer-freq {}: {}; expected an integer N (an MoE layer every N "
                    "layers) or a list expression of 0 (dense) and 1 (MoE) such as ([0]*3+[1]*58)",
                    kMegatronWhere, text_, what));
  }

  void skip_spaces() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  bool accept(char c) {
    skip_spaces();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  std::size_t number() {
    skip_spaces();
    const std::size_t start = pos_;
    std::size_t value = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      value = value * 10 + static_cast<std::size_t>(text_[pos_] - '0');
      if (value > kMaxEntries) fail(fmt::format("{}... is larger than any layer count", text_.substr(start, 8)));
      ++pos_;
    }
    if (pos_ == start)
      fail(pos_ < text_.size() ? fmt::format("expected a number at character {}", pos_ + 1)
                               : "the expression ends early");
    return value;
  }

  std::vector<int> expr() {
    std::vector<int> out = term();
    while (accept('+')) {
      const std::vector<int> more = term();
      out.insert(out.end(), more.begin(), more.end());
    }
    return out;
  }

  std::vector<int> term() {
    std::vector<int> out = atom();
    while (accept('*')) {
      const std::size_t n = number();
      if (out.size() * n > kMaxEntries) fail("the pattern is longer than any model");
      std::vector<int> repeated;
      repeated.reserve(out.size() * n);
      for (std::size_t i = 0; i < n; ++i) repeated.insert(repeated.end(), out.begin(), out.end());
      out = std::move(repeated);
    }
    return out;
  }

  std::vector<int> atom() {
    if (accept('(')) {
      if (++depth_ > kMaxDepth) fail(fmt::format("parentheses nest deeper than {}", kMaxDepth));
      std::vector<int> inner = expr();
      if (!accept(')')) fail("a '(' is not closed");
      --depth_;
      return inner;
    }
    if (!accept('['))
      fail(pos_ < text_.size() ? fmt::format("expected '[' or '(' at character {}", pos_ + 1)
                               : "the expression ends early");
    std::vector<int> list;
    if (accept(']')) return list;
    do {
      const std::size_t v = number();
      if (v > 1) fail(fmt::format("{} is neither 0 (a dense layer) nor 1 (an MoE layer)", v));
      list.push_back(static_cast<int>(v));
    } while (accept(','));
    if (!accept(']')) fail("a '[' is not closed");
    return list;
  }

  const std::string& text_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

std::vector<int> moe_layer_pattern(const std::string& text, std::int64_t num_layers) {
  const auto layers = static_cast<std::size_t>(num_layers);
  if (const std::optional<std::int64_t> n = whole_number(text)) {
    // An integer N: layer i holds an MoE MLP when i % N == 0.
    if (*n < 1)
      throw ConfigError(
          fmt::format("{}: --moe-layer-freq {}: expected a positive integer or a list expression of 0 "
                      "and 1 such as ([0]*3+[1]*58)",
                      kMegatronWhere, text));
    std::vector<int> pattern(layers);
    for (std::size_t l = 0; l < layers; ++l) pattern[l] = l % static_cast<std::size_t>(*n) == 0 ? 1 : 0;
    return pattern;
  }
  std::vector<int> pattern = PatternParser(text).parse();
  if (pattern.size() != layers)
    throw ConfigError(
        fmt::format("{}: --moe-layer-freq {}: gives {} layers where --num-layers is {}; give one entry "
                    "a layer",
                    kMegatronWhere, text, pattern.size(), num_layers));
  return pattern;
}

std::int64_t leading_dense_layers(const std::vector<int>& pattern, const std::string& text) {
  std::size_t dense = 0;
  while (dense < pattern.size() && pattern[dense] == 0) ++dense;
  for (std::size_t l = dense; l < pattern.size(); ++l)
    if (pattern[l] == 0)
      throw ConfigError(
          fmt::format("{}: --moe-layer-freq {}: layer {} is dense after an MoE layer; ptsim simulates "
                      "dense layers only before the first MoE one (first_dense_layers)",
                      kMegatronWhere, text, l));
  if (dense == pattern.size())
    throw ConfigError(
        fmt::format("{}: --moe-layer-freq {}: no layer holds an MoE MLP; drop --num-experts for a dense "
                    "model",
                    kMegatronWhere, text));
  return static_cast<std::int64_t>(dense);
}

}  // namespace ptsim::config::internal
