// Catch2's main, compiled once.
#define CATCH_CONFIG_MAIN
#include "test_support.hpp"
