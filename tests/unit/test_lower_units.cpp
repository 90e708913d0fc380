// Unit tests of the pure helpers of src/lower/: layout maps, Python-style
// indices, shape arithmetic over load-time sizes, broadcasting.
#include <gtest/gtest.h>

#include "lower/check.h"
#include "lower/emit.h"
#include "lower/operand.h"

using namespace nnapi_convert;

TEST(Layout, NhwcMapsAreInverse) {
  for (int64_t d = 0; d < 4; ++d) {
    EXPECT_EQ(kToNhwc[kToNchw[d]], d);
    EXPECT_EQ(kToNchw[kToNhwc[d]], d);
    EXPECT_EQ(nnapi_axis(DimOrder::ChannelsLast, d), kToNchw[d]);
    EXPECT_EQ(torch_dim(DimOrder::ChannelsLast, d), kToNhwc[d]);
    EXPECT_EQ(torch_dim(DimOrder::ChannelsLast, nnapi_axis(DimOrder::ChannelsLast, d)), d);
    EXPECT_EQ(nnapi_axis(DimOrder::Contiguous, d), d);
    EXPECT_EQ(torch_dim(DimOrder::Contiguous, d), d);
  }
  // Channels (PyTorch dim 1) are NNAPI's last axis of NHWC data.
  EXPECT_EQ(nnapi_axis(DimOrder::ChannelsLast, 1), 3);
  EXPECT_EQ(fix_shape({1, 3, 5, 7}, DimOrder::ChannelsLast), (Shape{1, 5, 7, 3}));
  EXPECT_EQ(fix_shape({1, 3, 5}, DimOrder::Contiguous), (Shape{1, 3, 5}));
  EXPECT_THROW(fix_shape({1, 3, 5}, DimOrder::ChannelsLast), LoweringError);
}

TEST(PyIndex, CountsNegativeFromTheEndAndRefusesOutOfRange) {
  EXPECT_EQ(py_index(-1, 4), 3);
  EXPECT_EQ(py_index(0, 4), 0);
  EXPECT_EQ(py_index(-4, 4), 0);
  EXPECT_THROW(py_index(4, 4), LoweringError);
  EXPECT_THROW(py_index(-5, 4), LoweringError);
}

TEST(SymArith, ConstantsFoldWithPythonFloorDivision) {
  EXPECT_EQ(sym_arith({7, ""}, '/', {2, ""}).value, 3);
  EXPECT_EQ(sym_arith({-7, ""}, '/', {2, ""}).value, -4);
  EXPECT_EQ(sym_arith({3, ""}, '*', {4, ""}).value, 12);
  EXPECT_EQ(sym_arith({3, ""}, '-', {4, ""}).value, -1);
  EXPECT_TRUE(sym_arith({3, ""}, '+', {4, ""}).is_constant());
}

TEST(SymArith, LoadTimeSizesBecomeScriptText) {
  const SymInt n = sym_dim(5, {0, 3}, 0);
  EXPECT_EQ(n.expr, flex_name(5, 0));
  EXPECT_EQ(sym_dim(5, {0, 3}, 1).value, 3);
  EXPECT_EQ(sym_arith(n, '/', {2, ""}).str(), "(" + n.expr + " // 2)");
  EXPECT_EQ(sym_arith({2, ""}, '*', n).str(), "(2 * " + n.expr + ")");
  // Multiplying or dividing by 1 is dropped (the reference's texts never come
  // from here: ops it covers write their shape lines themselves).
  EXPECT_EQ(sym_arith(n, '*', {1, ""}).str(), n.expr);
  EXPECT_EQ(sym_arith({1, ""}, '*', n).str(), n.expr);
  EXPECT_EQ(sym_arith(n, '/', {1, ""}).str(), n.expr);
}

TEST(BroadcastShape, AlignsTrailingDimsKeepsFlexibleAndRefusesMismatch) {
  EXPECT_EQ(broadcast_shape({2, 1, 4}, {3, 1}), (Shape{2, 3, 4}));
  EXPECT_EQ(broadcast_shape({1}, {0, 8}), (Shape{0, 8}));
  EXPECT_EQ(broadcast_shape({0, 8}, {0, 8}), (Shape{0, 8}));
  EXPECT_THROW(broadcast_shape({2, 3}, {4, 3}), LoweringError);
}
