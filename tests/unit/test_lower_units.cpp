// Unit tests of the pure helpers of src/lower/: layout maps, Python-style
// indices, shape arithmetic over load-time sizes, broadcasting, split sizes,
// max_pool2d's ceil_mode padding, and the
// output-shape formulas of dims.h (a number for a fixed size, the
// shape-compute text for a load-time one); and --verify-input's pickle
// rewrite (src/verify/torch_save.h).
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <vector>

#include "core/fallback.h"
#include "core/folding.h"
#include "core/isolation.h"
#include "lower/conv_pool.h"
#include "lower/dims.h"
#include "lower/dispatch.h"
#include "lower/emit.h"
#include "lower/kind_set.h"
#include "lower/operand.h"
#include "lower/refusal.h"
#include "lower/registry.h"
#include "lower/relayout.h"
#include "nnapi_convert/batch.h"
#include "nnapi_convert/validate.h"
#include "serialize/prepare_script.h"
#include "verify/torch_save.h"

using namespace nnapi_convert;

// KindSet holds c10's interned symbols: LibTorch interns a qualified name to
// the same symbol (c10::Symbol::fromQualString("aten::add") == c10::aten::add),
// so a set made of constants finds the kinds a graph's nodes carry, and kinds
// outside c10's tables (quantized::add) are found as fromQualString gives them.
TEST(KindSet, FindsKindsByTheirQualifiedNames) {
  const c10::Symbol qadd = c10::Symbol::fromQualString("quantized::add");
  const KindSet set({c10::aten::add, c10::prim::Constant, qadd, c10::aten::add});
  EXPECT_EQ(set.count(c10::Symbol::fromQualString("aten::add")), 1u);
  EXPECT_EQ(set.count(c10::Symbol::fromQualString("prim::Constant")), 1u);
  EXPECT_EQ(set.count(c10::Symbol::fromQualString("quantized::add")), 1u);
  EXPECT_EQ(set.count(c10::Symbol::fromQualString("aten::mul")), 0u);
  EXPECT_EQ(set.count(c10::Symbol::fromQualString("quantized::mul")), 0u);
  // Iterated once per kind, in the order a std::set<c10::Symbol> gives
  // (registration loops over such sets: video.cpp's per-frame kinds).
  const std::set<c10::Symbol> expected = {c10::Symbol::fromQualString("aten::add"),
                                          c10::Symbol::fromQualString("prim::Constant"), qadd};
  EXPECT_EQ(std::vector<c10::Symbol>(set.begin(), set.end()),
            std::vector<c10::Symbol>(expected.begin(), expected.end()));
}

// The folding tables, looked up by the names a TorchScript graph's nodes
// carry (docs/ops: "folded" kinds): shape arithmetic, and tensor factories
// and masks folded when their inputs are constant; lowered-only kinds are not.
TEST(KindSet, FoldingTablesFindGraphKinds) {
  for (const char* name : {"prim::NumToTensor", "aten::Int", "aten::ScalarImplicit",
                           "aten::floordiv", "aten::__getitem__", "aten::len", "prim::ListUnpack",
                           "prim::TupleIndex", "aten::size", "prim::Uninitialized"}) {
    EXPECT_EQ(foldable_kinds().count(c10::Symbol::fromQualString(name)), 1u) << name;
  }
  for (const char* name :
       {"aten::new_zeros", "aten::zeros_like", "aten::arange", "aten::masked_fill_", "aten::fill_",
        "aten::tril", "aten::logical_not"}) {
    EXPECT_EQ(tensor_foldable_kinds().count(c10::Symbol::fromQualString(name)), 1u) << name;
  }
  for (const char* name : {"aten::_convolution", "aten::hardtanh", "prim::Constant"}) {
    EXPECT_FALSE(is_foldable(c10::Symbol::fromQualString(name))) << name;
  }
}

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

// The reference's texts, as torch/backends/_nnapi/serializer.py writes them
// (_handle_conv_pool_flexible_input): unsimplified, even "+ 0" and "// 1".
TEST(Dims, ConvOutDimIsTheReferenceFormula) {
  const SymInt h = sym_dim(3, {1, 4, 0, 0}, 2);
  EXPECT_EQ(conv_out_dim(h, 3, 1, 1, 1, false).expr, "(s_3_2 - 3 + 1 + 1) // 1 + 1");
  EXPECT_EQ(conv_out_dim(h, 3, 0, 0, 2, true).expr, "(s_3_2 - 1) * 2 + 3 - 0 - 0");
  EXPECT_EQ(conv_out_dim({16, ""}, 3, 1, 1, 2, false).value, 8);  // (16 - 3 + 2) // 2 + 1
  EXPECT_EQ(conv_out_dim({7, ""}, 3, 1, 0, 2, true).value, 14);   // 6 * 2 + 3 - 1
  EXPECT_TRUE(conv_out_dim({16, ""}, 3, 1, 1, 2, false).is_constant());
}

TEST(Dims, PadTileAndBlockSizes) {
  const SymInt w = sym_dim(4, {1, 0}, 1);
  EXPECT_EQ(padded_dim(w, 3).expr, "(s_4_1 + 3)");
  EXPECT_EQ(padded_dim(w, 0).expr, "s_4_1");
  EXPECT_EQ(padded_dim({5, ""}, 3).value, 8);
  EXPECT_EQ(tiled_dim(w, 2).expr, "(s_4_1 * 2)");
  EXPECT_EQ(tiled_dim(w, 1).expr, "s_4_1");
  EXPECT_EQ(tiled_dim({5, ""}, 3).value, 15);
  EXPECT_EQ(depth_to_space_dim(w, 2).expr, "s_4_1 * 2");
  EXPECT_EQ(space_to_depth_dim(w, 2).expr, "s_4_1 // 2");
  EXPECT_EQ(space_to_depth_dim({8, ""}, 2).value, 4);
}

// torch.cat's size along the dim is the sum of the parts' sizes: a number
// when every part's is one, else the text of the sum (the reference's text
// where every part is a load-time size; where fixed and load-time parts mix,
// the reference declares the fixed parts' sum alone, which is wrong).
TEST(Dims, ConcatDimSumsEveryPart) {
  const SymInt a = sym_dim(1, {0}, 0), b = sym_dim(2, {0}, 0);
  EXPECT_EQ(concat_dim({a, b}).expr, "s_1_0 + s_2_0");
  EXPECT_EQ(concat_dim({{3, ""}, {4, ""}}).value, 7);
  EXPECT_EQ(concat_dim({a, {4, ""}}).expr, "s_1_0 + 4");
  EXPECT_EQ(concat_dim({{1, ""}, a, {2, ""}}).expr, "1 + s_1_0 + 2");
}

TEST(Dims, BroadcastAndPermutedDimsForwardFlexibleSizes) {
  const OperandHandle x{5, Operand{}.with_shape({0, 1, 8})};
  const OperandHandle y{6, Operand{}.with_shape({3, 0})};
  const std::vector<SymInt> d = broadcast_dims(broadcast_shape({0, 1, 8}, {3, 8}), {&x, &y});
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].expr, "s_5_0");
  EXPECT_EQ(d[1].value, 3);
  EXPECT_EQ(d[2].value, 8);
  // The first input with the dim flexible wins (dims aligned from the end).
  const std::vector<SymInt> e = broadcast_dims({3, 0}, {&y, &x});
  EXPECT_EQ(e[1].expr, "s_6_1");
  const std::vector<SymInt> p = permuted_dims(x, {2, 0, 1});
  EXPECT_EQ(p[0].value, 8);
  EXPECT_EQ(p[1].expr, "s_5_0");
  EXPECT_EQ(p[2].value, 1);
  const std::vector<SymInt> l = dims_like({0, 0, 8}, &x);
  EXPECT_EQ(l[0].expr, "s_5_0");
  EXPECT_TRUE(l[1].is_constant());  // flexible in the shape, not in `like`: a plain 0
  EXPECT_EQ(l[1].value, 0);
}

// torch.split(x, 3) of 8 elements: 3, 3, 2; chunk(x, 4) of 8 is split(x, 2).
TEST(SplitSizes, PartsOfSplitSizeTheLastOneSmaller) {
  EXPECT_EQ(split_sizes(8, 3), (std::vector<int64_t>{3, 3, 2}));
  EXPECT_EQ(split_sizes(8, 2), (std::vector<int64_t>{2, 2, 2, 2}));
  EXPECT_EQ(split_sizes(8, 10), (std::vector<int64_t>{8}));
  EXPECT_THROW(split_sizes(8, 0), LoweringError);
}

// PyTorch's ceil_mode size: ceil((in + 2 pad - k) / s) + 1, less one when the
// last window would start in the padding (start >= in + pad). The extra
// bottom/right padding makes NNAPI's floor formula give that size.
TEST(ApplyCeilMode, PadsBottomRightSoTheFloorFormulaRoundsUp) {
  ConvPoolArgs a = make_conv_pool_args({3, 3}, {2, 2}, {0, 0}, {1, 1}, 0);
  // in 8, k 3, s 2: floor (8 - 3) / 2 + 1 = 3, ceil 4 (last window starts at
  // 6 < 8): one more row, (4 - 1) * 2 + 3 - 8 = 1.
  apply_ceil_mode({1, 1, 8, 8}, &a);
  EXPECT_EQ(a.pad_b, 1);
  EXPECT_EQ(a.pad_r, 1);
  EXPECT_EQ(a.pad_t, 0);
  // in 7: (7 - 3) / 2 + 1 = 3 either way, nothing added.
  ConvPoolArgs b = make_conv_pool_args({3, 3}, {2, 2}, {0, 0}, {1, 1}, 0);
  apply_ceil_mode({1, 1, 7, 7}, &b);
  EXPECT_EQ(b.pad_b, 0);
  // in 6, k 2, s 2, pad 1: floor (6 + 2 - 2) / 2 + 1 = 4, ceil 4: nothing.
  // in 5, k 2, s 2, pad 1: floor (5 + 2 - 2) / 2 + 1 = 3, ceil 4, but the
  // 4th window would start at 6 >= 5 + 1: dropped, nothing added.
  ConvPoolArgs c = make_conv_pool_args({2, 2}, {2, 2}, {1, 1}, {1, 1}, 0);
  apply_ceil_mode({1, 1, 6, 5}, &c);
  EXPECT_EQ(c.pad_b, 1);
  EXPECT_EQ(c.pad_r, 1);
}

// A string of a literal's bytes, NULs included (not its terminating NUL).
template <size_t N>
std::string bytes(const char (&s)[N]) {
  return std::string(s, N - 1);
}

// --verify-input: APPEND and SETITEM (which LibTorch 1.13's unpickler lacks)
// become MARK ... APPENDS / SETITEMS. The inputs are what Python's
// pickle.dumps(obj, protocol=2) writes (torch.save's protocol); Python's
// pickle.loads gives the same object for each rewritten pickle.
TEST(TorchSave, AppendAndSetitemBecomeBatchOpcodes) {
  using nnapi_convert::pickle_with_batch_opcodes;
  // [1]
  EXPECT_EQ(pickle_with_batch_opcodes(bytes("\x80\2]q\0K\1a.")), bytes("\x80\2]q\0(K\1e."));
  // {'a': 1}
  EXPECT_EQ(pickle_with_batch_opcodes(bytes("\x80\2}q\0X\1\0\0\0aq\1K\1s.")),
            bytes("\x80\2}q\0(X\1\0\0\0aq\1K\1u."));
  // [[1]]: the inner list's MARK before its item, the outer's before the inner list.
  EXPECT_EQ(pickle_with_batch_opcodes(bytes("\x80\2]q\0]q\1K\1aa.")),
            bytes("\x80\2]q\0(]q\1(K\1ee."));
}

TEST(TorchSave, OtherPicklesAreUnchanged) {
  using nnapi_convert::pickle_with_batch_opcodes;
  auto same = [](const std::string& p) { EXPECT_EQ(pickle_with_batch_opcodes(p), p); };
  same(bytes("\x80\2]q\0(K\1K\2e."));  // [1, 2]: APPENDS already
  // [1] in protocol 4: its FRAME counts bytes, which a rewrite would change.
  same(bytes("\x80\4\x95\6\0\0\0\0\0\0\0]\x94K\1a."));
  same(bytes("\x80\2]q\0K\1"));        // truncated: no STOP
  same(bytes("\x80\2]q\0\xffK\1a."));  // not an opcode
  same(bytes("K\1a."));                // APPEND with nothing to append to
}

// --- weight relayout (src/lower/relayout.h): eager PyTorch's
// permute(perm).contiguous() is the oracle.

namespace {

// w.permute(perm).contiguous() by ATen, taken before permuted_contiguous runs.
at::Tensor aten_permuted(const at::Tensor& w, const std::vector<int64_t>& perm) {
  return w.clone().permute(perm).contiguous();
}

}  // namespace

TEST(Relayout, ConvWeightInPlaceKeepsItsValueAndAllocatesNothing) {
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{
           {8, 16, 3, 3}, {5, 7, 3, 3}, {6, 3, 7, 7}, {4, 9, 1, 5}, {3, 2, 2, 2}}) {
    at::Tensor w = at::randn(shape);
    const at::Tensor before = w.clone();
    const at::Tensor expected = aten_permuted(w, perm_vector(kToNhwc));
    const void* data = w.data_ptr();
    at::Tensor out = permuted_contiguous(w, perm_vector(kToNhwc));
    EXPECT_TRUE(out.is_contiguous());
    EXPECT_EQ(out.sizes(), expected.sizes());
    EXPECT_TRUE(out.equal(expected)) << "shape " << shape_str(shape);
    EXPECT_EQ(out.data_ptr(), data) << "not relaid in place";
    EXPECT_TRUE(w.equal(before)) << "the weight changed value";
    EXPECT_FALSE(w.is_contiguous());
    // Relaid again (a weight two convolutions share): the same view, no copy.
    at::Tensor again = permuted_contiguous(w, perm_vector(kToNhwc));
    EXPECT_EQ(again.data_ptr(), data);
    EXPECT_TRUE(again.equal(expected));
  }
}

TEST(Relayout, QuantizedAndIntegerWeightsInPlace) {
  at::Tensor q = at::quantize_per_tensor(at::randn({6, 5, 3, 3}), 0.05, 128, at::kQUInt8);
  const at::Tensor q_expected = aten_permuted(q, perm_vector(kToNhwc));
  const at::Tensor q_before = q.int_repr().clone();
  const void* q_data = q.data_ptr();
  at::Tensor q_out = permuted_contiguous(q, perm_vector(kToNhwc));
  EXPECT_EQ(q_out.data_ptr(), q_data) << "not relaid in place";
  EXPECT_TRUE(q_out.is_contiguous());
  EXPECT_TRUE(q_out.int_repr().equal(q_expected.int_repr()));
  EXPECT_EQ(q_out.q_scale(), 0.05);
  EXPECT_EQ(q_out.q_zero_point(), 128);
  EXPECT_TRUE(q.int_repr().equal(q_before));

  for (at::ScalarType t : {at::kInt, at::kShort, at::kDouble, at::kByte}) {
    at::Tensor w = at::randint(0, 100, {7, 6, 2, 5}, at::TensorOptions().dtype(t));
    const at::Tensor expected = aten_permuted(w, perm_vector(kToNhwc));
    const void* data = w.data_ptr();
    at::Tensor out = permuted_contiguous(w, perm_vector(kToNhwc));
    EXPECT_TRUE(out.equal(expected)) << c10::toString(t);
    EXPECT_EQ(out.data_ptr(), data) << c10::toString(t);
  }
}

TEST(Relayout, SharedStorageIsCopiedAndLeftAlone) {
  at::Tensor w = at::randn({4, 6, 3, 3});
  at::Tensor alias = w.view({4, 54});  // another tensor on the same bytes
  const at::Tensor alias_before = alias.clone();
  const at::Tensor expected = aten_permuted(w, perm_vector(kToNhwc));
  at::Tensor out = permuted_contiguous(w, perm_vector(kToNhwc));
  EXPECT_TRUE(out.equal(expected));
  EXPECT_NE(out.data_ptr(), w.data_ptr());
  EXPECT_TRUE(w.is_contiguous());
  EXPECT_TRUE(alias.equal(alias_before));

  // A slice (storage larger than the tensor) and a non-contiguous weight.
  at::Tensor big = at::randn({10, 6, 3, 3});
  at::Tensor slice = big.slice(0, 2, 7);
  EXPECT_TRUE(permuted_contiguous(slice, perm_vector(kToNhwc))
                  .equal(aten_permuted(slice, perm_vector(kToNhwc))));
  at::Tensor strided = at::randn({6, 4, 3, 3}).transpose(0, 1);
  EXPECT_TRUE(permuted_contiguous(strided, perm_vector(kToNhwc))
                  .equal(aten_permuted(strided, perm_vector(kToNhwc))));
}

TEST(Relayout, OtherPermutationsAndOneByOneKernels) {
  // Depthwise (O, 1, kh, kw) and transposed (I, O, kh, kw) weights: (1, 2, 3, 0).
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{32, 1, 3, 3}, {5, 7, 3, 2}, {3, 9, 4, 4}}) {
    at::Tensor w = at::randn(shape);
    const at::Tensor before = w.clone();
    const at::Tensor expected = aten_permuted(w, {1, 2, 3, 0});
    at::Tensor out = permuted_contiguous(w, {1, 2, 3, 0});
    EXPECT_TRUE(out.is_contiguous());
    EXPECT_TRUE(out.equal(expected)) << "shape " << shape_str(shape);
    EXPECT_TRUE(w.equal(before));
  }
  // A pointwise convolution's OIHW and OHWI are the same bytes: a view.
  at::Tensor pw = at::randn({16, 24, 1, 1});
  at::Tensor out = permuted_contiguous(pw, perm_vector(kToNhwc));
  EXPECT_EQ(out.data_ptr(), pw.data_ptr());
  EXPECT_TRUE(pw.is_contiguous());
  EXPECT_TRUE(out.equal(aten_permuted(pw, perm_vector(kToNhwc))));
}

TEST(Relayout, GatherStridedWalksAnyStridesAndElementSizes) {
  // Odd sizes exercise the 4x4 blocks' edges; 1-, 2-, 4- and 8-byte elements.
  for (at::ScalarType t : {at::kByte, at::kShort, at::kFloat, at::kDouble}) {
    for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{
             {13, 11}, {4, 4}, {3, 17}, {2, 5, 7}, {2, 3, 5, 7, 2}, {1}, {9}}) {
      at::Tensor src = at::randint(0, 120, shape, at::TensorOptions().dtype(t));
      std::vector<int64_t> perm(shape.size());
      for (size_t d = 0; d < perm.size(); ++d) perm[d] = static_cast<int64_t>(perm.size() - 1 - d);
      const at::Tensor view = src.permute(perm);
      at::Tensor dst = at::empty(view.sizes(), src.options());
      gather_strided(view.data_ptr(), dst.data_ptr(), view.sizes().vec(), view.strides().vec(),
                     src.element_size());
      EXPECT_TRUE(dst.equal(view.contiguous())) << c10::toString(t) << " " << shape_str(shape);
    }
  }
}

// --- batch scheduling (include/nnapi_convert/batch.h; this binary links the
// library): largest model file first when jobs outnumber workers.

TEST(ScheduleOrder, LargestFileFirstWithMoreJobsThanWorkers) {
  // A name of this process's own: two build trees may run this test at once.
  const std::string dir =
      ::testing::TempDir() + "nnapi-schedule-order-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::vector<Job> jobs;
  for (size_t bytes : {10, 300, 20, 300, 5000}) {
    Job j;
    j.options.model_path = dir + "/m" + std::to_string(jobs.size()) + ".pt";
    std::ofstream(j.options.model_path) << std::string(bytes, 'x');
    jobs.push_back(j);
  }
  Job missing;
  missing.options.model_path = dir + "/does-not-exist.pt";
  jobs.push_back(missing);
  // Sizes 10, 300, 20, 300, 5000, none: 5000 first, the two 300s in their
  // order, then 20, 10 and the unreadable one last.
  EXPECT_EQ(schedule_order(jobs, 2), (std::vector<size_t>{4, 1, 3, 2, 0, 5}));
  EXPECT_TRUE(schedule_order(jobs, 1).empty());  // one worker: the order given
  EXPECT_TRUE(schedule_order(jobs, 6).empty());  // a worker per job: all start at once
  std::filesystem::remove_all(dir);
}

// --- worker processes (src/core/isolation.h): with IsolationOptions::settle,
// each result a worker reports goes through settle in this process (not in
// the worker) before done() sees it, and run_isolated returns the settled
// results in task order.

TEST(RunIsolated, SettleRunsInThisProcessBeforeDone) {
  IsolationOptions iso;
  iso.parallel = 2;
  const std::string self = std::to_string(::getpid());
  std::vector<std::string> settled_in;  // settle's thread only; read after run_isolated
  iso.settle = [&](size_t i, const std::string& result) {
    settled_in.push_back(std::to_string(::getpid()));
    return result + ", settled " + std::to_string(i);
  };
  std::vector<std::string> seen_by_done(5);
  const std::vector<std::string> results = run_isolated(
      5, iso,
      [](size_t i) { return "task " + std::to_string(i) + " in " + std::to_string(::getpid()); },
      [](size_t, const TaskFailure& how) { return "failed: " + how.describe(); },
      [&](size_t i, const std::string& result) { seen_by_done.at(i) = result; });
  ASSERT_EQ(results.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    const std::string head = "task " + std::to_string(i) + " in ";
    const std::string tail = ", settled " + std::to_string(i);
    ASSERT_EQ(results[i].compare(0, head.size(), head), 0) << results[i];
    ASSERT_GE(results[i].size(), head.size() + tail.size()) << results[i];
    EXPECT_EQ(results[i].substr(results[i].size() - tail.size()), tail) << results[i];
    const std::string worker =
        results[i].substr(head.size(), results[i].size() - head.size() - tail.size());
    EXPECT_NE(worker, self) << "task " << i << " ran in this process";
    EXPECT_EQ(seen_by_done[i], results[i]);
  }
  EXPECT_EQ(settled_in, std::vector<std::string>(5, self));
}

// The validator's answers to the lowering's questions (nnapi_validate::
// input_type_level, level_with_inputs) are NeuralNetworks.h's "Supported
// tensor OperandCode" lists and "Available since" levels.
TEST(AskTheValidator, AnswersAreNeuralNetworksH) {
  using nnapi::Op;
  using T = nnapi::OperandType;
  namespace v = nnapi_validate;
  // RESHAPE: TENSOR_FLOAT32 and TENSOR_QUANT8_ASYMM (level 1), TENSOR_INT32
  // "since NNAPI feature level 6".
  EXPECT_EQ(v::input_type_level(Op::Reshape, T::TensorFloat32), 1);
  EXPECT_EQ(v::input_type_level(Op::Reshape, T::TensorInt32), 6);
  EXPECT_FALSE(v::accepts(Op::Reshape, T::TensorInt32, 5));
  EXPECT_TRUE(v::accepts(Op::Reshape, T::TensorInt32, 6));
  // No TENSOR_INT32 in SQUEEZE's, STRIDED_SLICE's, TRANSPOSE's,
  // CONCATENATION's, DEPTH_TO_SPACE's or SPACE_TO_DEPTH's lists.
  for (Op op : {Op::Squeeze, Op::StridedSlice, Op::Transpose, Op::Concatenation, Op::DepthToSpace,
                Op::SpaceToDepth}) {
    EXPECT_EQ(v::input_type_level(op, T::TensorInt32), std::nullopt) << nnapi::op_name(op);
    EXPECT_FALSE(v::accepts(op, T::TensorInt32, nnapi::kMaxFeatureLevel)) << nnapi::op_name(op);
  }
  // EXPAND_DIMS and SPLIT (level 3 operations) take TENSOR_INT32 from their start.
  EXPECT_EQ(v::input_type_level(Op::ExpandDims, T::TensorInt32), 3);
  EXPECT_EQ(v::input_type_level(Op::Split, T::TensorInt32), 3);
  // TRANSPOSE is of level 2: its TENSOR_FLOAT32 too.
  EXPECT_EQ(v::input_type_level(Op::Transpose, T::TensorFloat32), 2);
  // HARD_SWISH of level 4, BATCH_MATMUL of 6; RESIZE_BILINEAR of level 1,
  // 4 with align_corners and half_pixel_centers (inputs 4 and 5).
  EXPECT_EQ(v::level_with_inputs(Op::HardSwish, 1), 4);
  EXPECT_EQ(v::level_with_inputs(Op::BatchMatmul, 4), 6);
  EXPECT_EQ(v::level_with_inputs(Op::ResizeBilinear, 3), 1);
  EXPECT_EQ(v::level_with_inputs(Op::ResizeBilinear, 6), 4);
  // An operation whose rule declares no type table is a question the
  // lowering must not ask.
  EXPECT_THROW(v::input_type_level(Op::Add, T::TensorInt32), std::invalid_argument);
}

// A corrected rule (here: RESHAPE of TENSOR_INT32 from level 5) is what the
// validator's check of a model and the lowering's question both see, and
// only while the correction lives.
TEST(AskTheValidator, ACorrectedRuleIsSeenByTheCheckAndTheQuestion) {
  using nnapi::Op;
  using T = nnapi::OperandType;
  namespace v = nnapi_validate;
  v::Operand data, shape, out;
  data.type = out.type = shape.type = T::TensorInt32;
  data.dims = out.dims = {2, 8};
  shape.dims = {2};
  const std::vector<const v::Operand*> ins = {&data, &shape}, outs = {&out};
  const auto reshape = static_cast<int32_t>(Op::Reshape);
  EXPECT_EQ(v::operation_level(reshape, ins, outs), 6);
  {
    const v::testing::InputTypesOverride corrected(
        Op::Reshape, {{T::TensorFloat32, 1}, {T::TensorQuant8Asymm, 1}, {T::TensorInt32, 5}});
    EXPECT_EQ(v::operation_level(reshape, ins, outs), 5);
    EXPECT_EQ(v::input_type_level(Op::Reshape, T::TensorInt32), 5);
    EXPECT_FALSE(v::validate_operation_types(0, reshape, ins, outs).has_value());
    // TENSOR_FLOAT16 left out of the corrected list: now a finding.
    v::Operand half = data;
    half.type = out.type = T::TensorFloat16;
    const auto finding = v::validate_operation_types(0, reshape, {&half, &shape}, outs);
    ASSERT_TRUE(finding.has_value());
    EXPECT_EQ(finding->rule, v::Rule::OperandType);
    out.type = T::TensorInt32;
  }
  EXPECT_EQ(v::operation_level(reshape, ins, outs), 6);
  EXPECT_EQ(v::input_type_level(Op::Reshape, T::TensorInt32), 6);
}

// Issue 36: one KindSpec per node kind (lower/registry.h), and one dispatch
// (lower/dispatch.h) that chooses a kind's handler from its inputs' form.

// A kind is declared once: a second declaration is an internal error when the
// table is built, whatever the order of the families; the real table builds.
TEST(KindSpec, EachKindIsDeclaredOnce) {
  LoweringTable t;
  t.set_family("first");
  t.add("aten::relu", [](LoweringContext&, const Node*) {});
  t.set_family("second");
  try {
    t.add("aten::relu", [](LoweringContext&, const Node*) {});
    ADD_FAILURE() << "a second declaration of aten::relu was taken";
  } catch (const LoweringError& e) {
    EXPECT_NE(std::string(e.what()).find("aten::relu declared twice (by first and second)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(t.find(c10::aten::relu)->family, "first");
  const LoweringTable* table = nullptr;
  EXPECT_NO_THROW(table = &lowering_table());
  // The facts the separate kind lists held, now in the kind's spec: flatten's
  // lowering applies RESHAPE to int32 data, so the validator is asked whether
  // RESHAPE takes TENSOR_INT32 at the target; zeros is folded at conversion.
  const KindSpec* flatten = table->find(c10::aten::flatten);
  ASSERT_TRUE(flatten && flatten->moves);
  EXPECT_EQ(flatten->moves->how, Moves::First);
  EXPECT_EQ(flatten->moves->int32_op, nnapi::Op::Reshape);
  EXPECT_TRUE(flatten->takes_rank_above_4());
  EXPECT_TRUE(table->find(c10::aten::zeros)->folds);
  EXPECT_TRUE(table->find(c10::aten::add)->above_rank_4 != nullptr);
  EXPECT_TRUE(table->find(c10::aten::add)->frames.takes != nullptr);
  EXPECT_FALSE(table->find(c10::aten::linear)->takes_rank_above_4());
}

namespace {

// Lowers `ir`'s nodes by the dispatch, its inputs given as operands of
// `shapes` (float32, contiguous; a rank > 4 one held merged to rank 4, as
// the driver holds a model input); `complex`: the first input holds complex
// values as real pairs in its last dim (an aten::stft result).
struct Dispatched {
  std::shared_ptr<torch::jit::Graph> graph = std::make_shared<torch::jit::Graph>();
  LoweringContext cx;
  Dispatched(const std::string& ir, const std::vector<Shape>& shapes, bool complex = false) {
    torch::jit::parseIR(ir, graph.get());
    for (size_t i = 0; i < shapes.size(); ++i) {
      const Value* v = graph->inputs()[i];
      Operand o;
      o.shape = shapes[i];
      const int32_t id =
          cx.add_input(static_cast<int>(i), v, o.with_shape(nnapi_input_dims(shapes[i])));
      cx.rebind(v, id, o);
      if (complex && i == 0) cx.set_torch_dtype(v, at::kComplexFloat);
    }
    for (const Node* node : graph->nodes()) dispatch(cx, node, nullptr).lower(cx);
  }
  std::map<std::string, int> operations() { return cx.model().operation_histogram(); }
  Operand result() const { return cx.get_operand(graph->outputs()[0]).op; }
};

}  // namespace

// aten::relu: rank <= 4 is its lowering, RELU; rank > 4 its rank_reduce.cpp
// handler, RELU of the operand that holds the elements merged (NNAPI takes
// rank 4 at most; the plain lowering would make a rank-5 operand), the
// result still read as rank 5.
TEST(Dispatch, ReluByRankOfItsInput) {
  const std::string ir = R"IR(
graph(%x : Tensor):
  %y : Tensor = aten::relu(%x)
  return (%y))IR";
  Dispatched plain(ir, {{2, 3, 4, 5}});
  EXPECT_EQ(plain.operations(), (std::map<std::string, int>{{"RELU", 1}}));
  EXPECT_EQ(plain.result().shape, (Shape{2, 3, 4, 5}));
  Dispatched high(ir, {{2, 3, 4, 5, 6}});
  EXPECT_EQ(high.operations().at("RELU"), 1);
  EXPECT_EQ(high.result().shape, (Shape{2, 3, 4, 5, 6}));
  for (size_t id = 0; id < high.cx.model().operand_count(); ++id) {
    EXPECT_LE(high.cx.model().operand(static_cast<int32_t>(id)).dims.size(), 4u) << id;
  }
  // aten::linear takes no rank > 4 input: refused before its lowering.
  EXPECT_THROW(Dispatched(R"IR(
graph(%x : Tensor, %w : Tensor):
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::linear(%x, %w, %none)
  return (%y))IR",
                          {{2, 3, 4, 5, 6}, {6, 6}}),
               LoweringError);
}

// aten::abs: of a complex input (real pairs) the magnitude, sqrt(re^2 + im^2)
// over the last dim (spectral.cpp); of a real input ABS.
TEST(Dispatch, AbsByWhetherItsInputIsComplex) {
  const std::string ir = R"IR(
graph(%x : Tensor):
  %y : Tensor = aten::abs(%x)
  return (%y))IR";
  Dispatched real(ir, {{1, 5, 7, 2}});
  EXPECT_EQ(real.operations(), (std::map<std::string, int>{{"ABS", 1}}));
  Dispatched complex(ir, {{1, 5, 7, 2}}, true);
  EXPECT_EQ(complex.operations(),
            (std::map<std::string, int>{{"MUL", 1}, {"REDUCE_SUM", 1}, {"SQRT", 1}}));
  EXPECT_EQ(complex.result().shape, (Shape{1, 5, 7}));
}

// A video: max_pool3d holds its result as frames (T*N, C, H, W); aten::relu
// of it is RELU of the frames, held as frames still (video.cpp's per-frame
// handler), where a kind that takes no frames (aten::flatten) reads the video
// unfolded to (N, C, T, H, W) first: one TRANSPOSE.
TEST(Dispatch, FramesPerFrameOrUnfolded) {
  const std::string pool = R"IR(
graph(%x : Tensor):
  %k : int[] = prim::Constant[value=[1, 2, 2]]()
  %p : int[] = prim::Constant[value=[0, 0, 0]]()
  %d : int[] = prim::Constant[value=[1, 1, 1]]()
  %f : bool = prim::Constant[value=0]()
  %v : Tensor = aten::max_pool3d(%x, %k, %k, %p, %d, %f)
)IR";
  Dispatched per_frame(pool + R"IR(  %y : Tensor = aten::relu(%v)
  return (%y))IR",
                       {{1, 3, 4, 6, 6}});
  EXPECT_EQ(per_frame.result().dim_order, DimOrder::FramesNchw);
  EXPECT_EQ(per_frame.operations().count("TRANSPOSE"), 1u);  // into frames only
  EXPECT_EQ(per_frame.operations().at("RELU"), 1);
  Dispatched unfolded(pool + R"IR(  %s : int = prim::Constant[value=0]()
  %e : int = prim::Constant[value=-1]()
  %y : Tensor = aten::flatten(%v, %s, %e)
  return (%y))IR",
                      {{1, 3, 4, 6, 6}});
  EXPECT_EQ(unfolded.operations().at("TRANSPOSE"), 2);  // into frames, and out
  EXPECT_EQ(unfolded.result().shape, (Shape{1 * 3 * 4 * 3 * 3}));
}

// --cpu-fallback's check that every NNAPI part's model inputs are fed by the
// calling graph (check_parts_fed): a part NNAPI would run with an input left
// unset (NeuralNetworks.h: a null buffer of length 0 is an omitted operand,
// which is what a zero-sized tensor becomes) must be refused before writing.
namespace {

// A --cpu-fallback conversion whose graph calls part 0 with %x (and %y when
// `both`), the part's NNAPI model having `part_inputs` inputs.
struct FallbackCall {
  Conversion c;
  std::shared_ptr<torch::jit::Graph> graph = std::make_shared<torch::jit::Graph>();
  FallbackCall(bool both, size_t part_inputs) {
    torch::jit::parseIR(std::string(R"IR(
graph(%self : Tensor, %x : Tensor, %y : Tensor):
  %z : Tensor = nnapi_convert::segment[index=0]()IR") +
                            (both ? "%x, %y" : "%x") + R"IR()
  return (%z))IR",
                        graph.get());
    Conversion part;
    part.inp_mem_fmts.assign(part_inputs, 0);
    c.segments.push_back(part);
    auto fg = std::make_shared<FallbackGraph>();
    fg->graph = graph;
    c.fallback = fg;
  }
  const torch::jit::Value* input(size_t i) const { return graph->inputs()[i + 1]; }
};

std::string refusal(const FallbackCall& f, const SizesSeen& seen) {
  try {
    check_parts_fed(f.c, seen, "m.pt");
  } catch (const ConvertError& e) {
    EXPECT_EQ(e.exit_code(), 1);
    return e.what();
  }
  return "";
}

}  // namespace

TEST(FallbackParts, EveryInputFedPasses) {
  FallbackCall f(true, 2);
  EXPECT_EQ(refusal(f, {{f.input(0), {1, 8, 80}}, {f.input(1), {1, 4}}}), "");
}

TEST(FallbackParts, AnInputTheGraphDoesNotPassIsRefused) {
  FallbackCall f(false, 2);  // the part's model takes 2 inputs; the graph passes 1
  const std::string msg = refusal(f, {{f.input(0), {1, 8, 80}}});
  EXPECT_NE(msg.find("model 'm.pt': --cpu-fallback: NNAPI part 0 of 1: its model input 1 is "
                     "not fed"),
            std::string::npos)
      << msg;
}

TEST(FallbackParts, AZeroSizedInputIsRefused) {
  FallbackCall f(true, 2);
  const std::string msg = refusal(f, {{f.input(0), {1, 8, 80}}, {f.input(1), {0, 1, 80}}});
  EXPECT_NE(msg.find("NNAPI part 0 of 1: its model input 1 (%y, "), std::string::npos) << msg;
  EXPECT_NE(msg.find("is fed a zero-sized tensor ((0, 1, 80))"), std::string::npos) << msg;
}

TEST(FallbackParts, MoreValuesThanInputsAndUncalledPartsAreRefused) {
  FallbackCall more(true, 1);
  EXPECT_NE(refusal(more, {{more.input(0), {2}}, {more.input(1), {2}}})
                .find("its NNAPI model has 1 input(s), but the calling graph passes 2"),
            std::string::npos);
  FallbackCall uncalled(true, 2);
  uncalled.c.segments.emplace_back();  // part 1 is never called
  EXPECT_NE(refusal(uncalled, {{uncalled.input(0), {2}}, {uncalled.input(1), {2}}})
                .find("NNAPI part 1 of 2: the calling graph calls it 0 time(s), not once"),
            std::string::npos);
}
