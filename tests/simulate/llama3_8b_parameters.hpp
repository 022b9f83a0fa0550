// Llama 3 8B's parameters as closed forms, for the data-parallel tests'
// traffic and memory: a layer's (q and o 4096², k and v 4096·1024, the
// SwiGLU MLP 3·4096·14336, two norms 4096) and the untied embedding and
// output layer's (128,256 × 4096 each, the final norm 4096).
#pragma once

namespace ptsim::test::llama3_8b {

inline constexpr double kLayer = 4096.0 * (4096 + 1024 + 1024 + 4096) + 3.0 * 4096 * 14336 + 2 * 4096;
inline constexpr double kBoundary = 2.0 * 128256 * 4096 + 4096;
inline constexpr double kParameters = 32 * kLayer + kBoundary;

}  // namespace ptsim::test::llama3_8b
