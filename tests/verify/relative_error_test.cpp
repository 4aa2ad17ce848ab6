// The one relative-error rule: normwise over the reference's largest magnitude, NaN or
// infinity always a failure, an all-zero reference matched only exactly; outputs are
// matched by name.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "graph/error.h"
#include "verify/relative_error.h"

namespace mugraph::verify {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

double error(const std::vector<double>& reference, const std::vector<double>& candidate) {
  return normwiseRelativeError(reference, candidate);
}

TEST(NormwiseRelativeError, LargestDifferenceOverLargestReference) {
  EXPECT_DOUBLE_EQ(error({1, -4, 2}, {1.5, -4, 2}), 0.125);
  EXPECT_DOUBLE_EQ(error({1, -4, 2}, {1, -4, 3}), 0.25);
  EXPECT_EQ(error({1, -4, 2}, {1, -4, 2}), 0.0);
  EXPECT_EQ(error({}, {}), 0.0);
}

TEST(NormwiseRelativeError, AllZeroReferenceIsMatchedOnlyExactly) {
  EXPECT_EQ(error({0, 0, 0}, {0, 0, 0}), 0.0);
  EXPECT_EQ(error({0, 0, 0}, {0, -0.0, 0}), 0.0);
  EXPECT_EQ(error({0, 0}, {0, 1e-300}), kInf);
  EXPECT_EQ(error({0, 0}, {-3, 0}), kInf);
  // One nonzero reference value is enough to make the error relative again.
  EXPECT_DOUBLE_EQ(error({0, 2}, {1e-3, 2}), 5e-4);
}

TEST(NormwiseRelativeError, NonFiniteValuesAreFailures) {
  EXPECT_EQ(error({1, 2}, {1, kNan}), kInf);
  EXPECT_EQ(error({kNan, 2}, {1, 2}), kInf);
  EXPECT_EQ(error({kInf, 2}, {kInf, 2}), kInf);
  EXPECT_EQ(error({1, 2}, {1, -kInf}), kInf);
}

TEST(NormwiseRelativeError, DifferentSizesAreUserErrors) {
  EXPECT_THROW(error({1, 2}, {1, 2, 3}), UserError);
}

TensorMap<double> single(std::vector<double> values) {
  return {{"out", {{static_cast<int64_t>(values.size())}, std::move(values)}}};
}

TEST(MaxRelativeError, WorstOutputByTheNormwiseRule) {
  EXPECT_DOUBLE_EQ(maxRelativeError(single({1, -4, 2}), single({1.5, -4, 2})), 0.125);
  TensorMap<double> reference = single({1, 2});
  TensorMap<double> candidate = single({1, 2});
  reference["other"] = {{2}, {10, 10}};
  candidate["other"] = {{2}, {10, 13}};
  EXPECT_DOUBLE_EQ(maxRelativeError(reference, candidate), 0.3);
  reference["zero"] = {{2}, {0, 0}};
  candidate["zero"] = {{2}, {0, 1e-300}};
  EXPECT_EQ(maxRelativeError(reference, candidate), kInf);
}

TEST(MaxRelativeError, MismatchedOutputsAreUserErrors) {
  TensorMap<double> renamed = single({1, 2});
  renamed["other"] = renamed.at("out");
  renamed.erase("out");
  EXPECT_THROW(maxRelativeError(single({1, 2}), renamed), UserError);
  TensorMap<double> extra = single({1, 2});
  extra["other"] = {{1}, {1}};
  EXPECT_THROW(maxRelativeError(single({1, 2}), extra), UserError);
  EXPECT_THROW(maxRelativeError(single({1, 2}), single({1, 2, 3})), UserError);
}

}  // namespace
}  // namespace mugraph::verify
