// Assertions shared by the test suites.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

namespace edgeattn::testing {

/// Expects `f` to throw exactly E (a different type propagates and fails the test) with a message
/// containing every needle: errors must name the operand, the expected and the actual value.
template <class E, class F, class Needles = std::initializer_list<std::string>>
void expect_throw_naming(F&& f, const Needles& needles) {
  try {
    f();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    for (const auto& n : needles) EXPECT_THAT(e.what(), ::testing::HasSubstr(n));
  }
}

}  // namespace edgeattn::testing
