// Element-wise tensor comparison shared by the test suites.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "edgeattn/core/tensor.hpp"

namespace edgeattn::testing {

/// Expects a and b to have the same number of elements and |a_i - b_i| <= tol * (1 + |b_i|)
/// for each element, naming the first elements that differ.
inline void expect_near_all(const Tensor& a, const Tensor& b, float tol) {
  ASSERT_EQ(a.numel(), b.numel());
  for (int64_t i = 0; i < a.numel(); ++i)
    EXPECT_NEAR(a.data()[i], b.data()[i], tol * (1.f + std::abs(b.data()[i]))) << "element " << i;
}

}  // namespace edgeattn::testing
