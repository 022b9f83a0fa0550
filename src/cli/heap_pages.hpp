// The process's heap backed by transparent huge pages (see heap_pages.cpp).
#pragma once

namespace ptsim::cli {

/// Reserves the first tens of MiB of the malloc heap and asks the kernel to
/// back them with 2 MiB transparent huge pages (madvise), so that building a
/// step's workload and engine state faults once per 2 MiB instead of once
/// per 4 KiB page. Call once, first thing in main. Does nothing where glibc,
/// Linux or transparent huge pages are missing, and in sanitizer builds.
void prefer_huge_heap_pages();

}  // namespace ptsim::cli
