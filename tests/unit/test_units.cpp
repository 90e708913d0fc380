// Unit tests: the --input spec language, Python float repr, NNAPI feature levels.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "nnapi_convert/input_spec.h"
#include "nnapi_convert/nnapi_types.h"
#include "nnapi_convert/op_signature.h"
#include "serialize/pyrepr.h"

using namespace nnapi_convert;

// Expected strings are what Python 3's repr() prints for these doubles.
TEST(PyFloatRepr, MatchesPythonRepr) {
  EXPECT_EQ(py_float_repr(0.25), "0.25");
  EXPECT_EQ(py_float_repr(1.0), "1.0");
  EXPECT_EQ(py_float_repr(1.5), "1.5");
  EXPECT_EQ(py_float_repr(0.0625), "0.0625");
  EXPECT_EQ(py_float_repr(1.0 / 256), "0.00390625");
  EXPECT_EQ(py_float_repr(0.1), "0.1");
  EXPECT_EQ(py_float_repr(0.03), "0.03");
  EXPECT_EQ(py_float_repr(1e-05), "1e-05");
  EXPECT_EQ(py_float_repr(0.0001), "0.0001");
  EXPECT_EQ(py_float_repr(1.5e-07), "1.5e-07");
  EXPECT_EQ(py_float_repr(1e16), "1e+16");
  EXPECT_EQ(py_float_repr(123456789012345.0), "123456789012345.0");
  EXPECT_EQ(py_float_repr(-2.5), "-2.5");
  EXPECT_EQ(py_float_repr(0.0), "0.0");
}

TEST(InputSpec, ParsesDimsDtypeQuantizationAndLayout) {
  InputSpec s = parse_input_spec("1x3x0x0,dtype=quint8,scale=0.0625,zero_point=128,nhwc");
  EXPECT_EQ(s.dims, (std::vector<int64_t>{1, 3, 0, 0}));
  EXPECT_EQ(s.dtype, InputDType::QUInt8);
  EXPECT_EQ(s.scale, 0.0625);
  EXPECT_EQ(s.zero_point, 128);
  EXPECT_TRUE(s.nhwc);
  InputSpec f = parse_input_spec("2x16");
  EXPECT_EQ(f.dtype, InputDType::Float32);
  EXPECT_FALSE(f.nhwc);
  // A scale written as Python's repr() round-trips exactly.
  EXPECT_EQ(parse_input_spec("4,dtype=quint8,scale=0.03,zero_point=0").scale, 0.03);
  // A bool padding mask (TENSOR_INT32 0/1 for NNAPI).
  EXPECT_EQ(parse_input_spec("1x0,dtype=bool").dtype, InputDType::Bool);
}

// `parse` refuses `bad` with a SpecError that quotes it.
template <typename Parse>
void expect_refused_naming(Parse parse, const char* bad) {
  try {
    parse(bad);
    ADD_FAILURE() << "accepted '" << bad << "'";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos)
        << e.what();
  }
}

TEST(InputSpec, RejectsBadSpecsNamingThem) {
  for (const char* bad :
       {"", "x", "1x", "1xx2", "-1x3", "1x3.5", "1x3,dtype=float64", "1x3,dtype=quint8",
        "1x3,dtype=quint8,scale=0,zero_point=0", "1x3,dtype=quint8,scale=1,zero_point=256",
        "1x3,scale=0.5", "1x3,dtype=bool,scale=0.5", "1x3,nhwc", "1x3x4x5,nhwc,nhwc", "1x3,bogus",
        "1x3,dtype=quint8,"
        "scale=nan,zero_point=1",
        "99999999999x2", "2147483647x2147483647x2147483647"}) {
    expect_refused_naming(parse_input_spec, bad);
  }
}

// Argument specs (cli.md, "Arguments that are not tensors"): the values
// as written, a list's items in order, each a tensor spec of its own.
TEST(ArgSpec, ParsesValuesListsAndTuples) {
  EXPECT_EQ(parse_arg_spec("int=16000").kind, ArgKind::Int);
  EXPECT_EQ(parse_arg_spec("int=16000").int_value, 16000);
  EXPECT_EQ(parse_arg_spec("int=-3").int_value, -3);
  EXPECT_EQ(parse_arg_spec("float=0.5").float_value, 0.5);
  EXPECT_EQ(parse_arg_spec("float=2").float_value, 2.0);
  EXPECT_TRUE(parse_arg_spec("bool=true").bool_value);
  EXPECT_FALSE(parse_arg_spec("bool=false").bool_value);
  EXPECT_EQ(parse_arg_spec("none").kind, ArgKind::None);
  const ArgSpec list = parse_arg_spec("list=1x3x320x320,nhwc+1x3x240x320");
  ASSERT_EQ(list.kind, ArgKind::List);
  ASSERT_EQ(list.tensors.size(), 2u);
  EXPECT_EQ(list.tensors[0].dims, (std::vector<int64_t>{1, 3, 320, 320}));
  EXPECT_TRUE(list.tensors[0].nhwc);
  EXPECT_EQ(list.tensors[1].dims, (std::vector<int64_t>{1, 3, 240, 320}));
  EXPECT_FALSE(list.tensors[1].nhwc);
  // A '+' that is an exponent's sign does not split the items.
  const ArgSpec big = parse_arg_spec("tuple=2,dtype=int16,scale=1e+20+3");
  ASSERT_EQ(big.kind, ArgKind::Tuple);
  ASSERT_EQ(big.tensors.size(), 2u);
  EXPECT_EQ(big.tensors[0].scale, 1e20);
  EXPECT_EQ(big.tensors[1].dims, (std::vector<int64_t>{3}));
  const ArgSpec tensor = parse_arg_spec("1x64");
  EXPECT_EQ(tensor.kind, ArgKind::Tensor);
  EXPECT_EQ(tensor_specs({tensor, list}).size(), 3u);
  EXPECT_TRUE(all_tensors({tensor, tensor}));
  EXPECT_FALSE(all_tensors({tensor, list}));
}

TEST(ArgSpec, RejectsBadSpecsNamingThem) {
  for (const char* bad :
       {"int=", "int=1.5", "int=16k", "float=", "float=nan", "float=x", "bool=", "bool=True",
        "bool=1", "list=", "tuple=", "list=1x3+", "list=1x3+1xq", "None", "nones", "int16000"}) {
    expect_refused_naming(parse_arg_spec, bad);
  }
}

TEST(ArgSpec, FormatRoundTrips) {
  for (const char* text : {"int=16000", "float=0.1", "bool=false", "none",
                           "list=1x3x8x8+2x0,dtype=bool", "tuple=1x64+1x3x4x4,nhwc"}) {
    const ArgSpec a = parse_arg_spec(text);
    const ArgSpec b = parse_arg_spec(format_arg_spec(a));
    EXPECT_EQ(a.kind, b.kind) << text;
    EXPECT_EQ(a.int_value, b.int_value) << text;
    EXPECT_EQ(a.float_value, b.float_value) << text;
    EXPECT_EQ(a.bool_value, b.bool_value) << text;
    EXPECT_EQ(a.tensors.size(), b.tensors.size()) << text;
  }
  EXPECT_EQ(format_arg_spec(parse_arg_spec("int=+7")), "int=7");
}

TEST(InputSpec, FormatRoundTrips) {
  for (const char* text : {"1x3x224x224", "1x3x0x0,nhwc",
                           "2x32,dtype=quint8,scale=0.05,zero_point=130", "2x0,dtype=bool"}) {
    InputSpec s = parse_input_spec(text);
    InputSpec t = parse_input_spec(format_input_spec(s));
    EXPECT_EQ(s.dims, t.dims);
    EXPECT_EQ(s.dtype, t.dtype);
    EXPECT_EQ(s.scale, t.scale);
    EXPECT_EQ(s.zero_point, t.zero_point);
    EXPECT_EQ(s.nhwc, t.nhwc);
  }
}

// NeuralNetworks.h: "Available since NNAPI feature level N" per operation and
// operand type; ANEURALNETWORKS_FEATURE_LEVEL_1..5 are API levels 27..31.
TEST(FeatureLevel, OperationsAndTypesAsNeuralNetworksHSays) {
  using nnapi::Op;
  auto level = [](Op op, int n_inputs) {
    return nnapi::operation_feature_level(static_cast<int32_t>(op), n_inputs);
  };
  EXPECT_EQ(level(Op::Add, 3), 1);
  EXPECT_EQ(level(Op::Transpose, 2), 2);
  EXPECT_EQ(level(Op::PadV2, 3), 3);
  EXPECT_EQ(level(Op::ResizeBilinear, 4), 1);
  EXPECT_EQ(level(Op::ResizeBilinear, 6), 4);  // align_corners, half_pixel_centers
  EXPECT_EQ(level(Op::ResizeNearestNeighbor, 4), 3);
  EXPECT_EQ(level(Op::ResizeNearestNeighbor, 6), 4);
  EXPECT_EQ(level(Op::HardSwish, 1), 4);
  EXPECT_EQ(level(Op::BatchMatmul, 4), 6);
  EXPECT_EQ(nnapi::operand_type_feature_level(
                static_cast<int32_t>(nnapi::OperandType::TensorQuant8Asymm)),
            1);
  EXPECT_EQ(nnapi::operand_type_feature_level(static_cast<int32_t>(nnapi::OperandType::Bool)), 3);
  EXPECT_EQ(nnapi::android_api_of_feature_level(1), 27);
  EXPECT_EQ(nnapi::android_api_of_feature_level(5), 31);
  EXPECT_EQ(nnapi::feature_level_of_android_api(29), 3);
  EXPECT_EQ(nnapi::feature_level_of_android_api(32), 5);  // Android 12L: still level 5
  EXPECT_EQ(nnapi::feature_level_of_android_api(33), 6);
}

// The operand signatures (op_signature.h) against NeuralNetworks.h's operand
// lists, written here from the header's documentation of each operation
// ("Inputs (explicit padding): * 0: ... * 3: An INT32 value, specifying the
// padding on the left ..."): for each form, the input counts it may have and
// the role at every position.
struct FormFacts {
  nnapi::Op op;
  const char* form;
  std::vector<size_t> counts;
  std::vector<const char*> roles;
  // The first role repeats (counts: the fewest inputs).
  bool variadic = false;
};

const std::vector<FormFacts>& neural_networks_h_forms() {
  using nnapi::Op;
  static const std::vector<FormFacts> facts = [] {
    const char *in = "input", *w = "filter", *b = "bias", *pl = "padding left",
               *pr = "padding right", *pt = "padding top", *pb = "padding bottom",
               *scheme = "padding scheme", *sw = "stride width", *sh = "stride height",
               *fuse = "fused activation", *nchw = "NCHW layout flag", *dw = "dilation width",
               *dh = "dilation height", *mult = "depth multiplier", *groups = "groups",
               *fw = "filter width", *fh = "filter height";
    std::vector<FormFacts> f = {
        {Op::Conv2d,
         "explicit padding",
         {10, 11, 13},
         {in, w, b, pl, pr, pt, pb, sw, sh, fuse, nchw, dw, dh}},
        {Op::Conv2d,
         "implicit padding",
         {7, 8, 10},
         {in, w, b, scheme, sw, sh, fuse, nchw, dw, dh}},
        {Op::DepthwiseConv2d,
         "explicit padding",
         {11, 12, 14},
         {in, w, b, pl, pr, pt, pb, sw, sh, mult, fuse, nchw, dw, dh}},
        {Op::DepthwiseConv2d,
         "implicit padding",
         {8, 9, 11},
         {in, w, b, scheme, sw, sh, mult, fuse, nchw, dw, dh}},
        {Op::GroupedConv2d,
         "explicit padding",
         {12},
         {in, w, b, pl, pr, pt, pb, sw, sh, groups, fuse, nchw}},
        {Op::GroupedConv2d,
         "implicit padding",
         {9},
         {in, w, b, scheme, sw, sh, groups, fuse, nchw}},
        {Op::TransposeConv2d,
         "explicit padding",
         {11},
         {in, w, b, pl, pr, pt, pb, sw, sh, fuse, nchw}},
        {Op::TransposeConv2d,
         "implicit padding",
         {9},
         {in, w, b, "output shape", scheme, sw, sh, fuse, nchw}},
    };
    for (Op op : {Op::AveragePool2d, Op::MaxPool2d, Op::L2Pool2d}) {
      f.push_back(
          {op, "explicit padding", {10, 11}, {in, pl, pr, pt, pb, sw, sh, fw, fh, fuse, nchw}});
      f.push_back({op, "implicit padding", {7, 8}, {in, scheme, sw, sh, fw, fh, fuse, nchw}});
    }
    // "1: An INT32 value, specifying the block_size ... 2: An optional
    // BOOL scalar ... NCHW"; SOFTMAX's "1: beta ... 2: Optional ... axis".
    for (Op op : {Op::DepthToSpace, Op::SpaceToDepth})
      f.push_back({op, "", {2, 3}, {in, "block size", nchw}});
    f.push_back({Op::Softmax, "", {2, 3}, {in, "beta", "axis"}});
    f.push_back({Op::LogSoftmax, "", {3}, {in, "beta", "axis"}});
    for (Op op : {Op::ResizeBilinear, Op::ResizeNearestNeighbor}) {
      f.push_back(
          {op,
           "by size",
           {3, 4, 5, 6},
           {in, "output width", "output height", nchw, "align_corners", "half_pixel_centers"}});
      f.push_back(
          {op,
           "by scale",
           {3, 4, 5, 6},
           {in, "width scale", "height scale", nchw, "align_corners", "half_pixel_centers"}});
    }
    // L2_NORMALIZATION "1: An optional INT32 scalar, default to -1, specifying
    // the dimension normalization would be performed on" (feature level 3).
    f.push_back({Op::L2Normalization, "", {1, 2}, {in, "axis"}});
    // LOCAL_RESPONSE_NORMALIZATION "1: An INT32 scalar, specifying the radius
    // ... 2: A scalar, specifying the bias, must not be zero ... 3: ... the
    // scale factor, alpha ... 4: ... the exponent, beta ... 5: An optional
    // INT32 scalar, default to -1, specifying the dimension".
    f.push_back({Op::LocalResponseNormalization,
                 "",
                 {5, 6},
                 {in, "radius", "bias scalar", "alpha", "beta", "axis"}});
    // BATCH_TO_SPACE_ND "1: A 1-D Tensor of TENSOR_INT32, the block sizes ...
    // 2: An optional BOOL scalar ... NCHW"; SPACE_TO_BATCH_ND "1: ... block
    // sizes ... 2: A 2-D Tensor of TENSOR_INT32, the paddings ... 3: An
    // optional BOOL scalar ... NCHW".
    f.push_back({Op::BatchToSpaceNd, "", {2, 3}, {in, "block shape", nchw}});
    f.push_back({Op::SpaceToBatchNd, "", {3, 4}, {in, "block shape", "paddings", nchw}});
    // BATCH_MATMUL "0: A tensor ... LHS ... 1: A tensor ... RHS ... 2: An
    // optional BOOL scalar ... adj_x ... 3: An optional BOOL scalar ... adj_y".
    f.push_back({Op::BatchMatmul, "", {2, 3, 4}, {in, "second input", "adj_x", "adj_y"}});
    // ADD, MUL, SUB, DIV "0: A tensor. 1: A tensor of the same OperandCode,
    // and compatible dimensions as input0. 2: An INT32 scalar, and has to be
    // one of the FuseCode values".
    for (Op op : {Op::Add, Op::Mul, Op::Sub, Op::Div})
      f.push_back({op, "", {3}, {in, "second input", fuse}});
    // FULLY_CONNECTED "1: A 2-D tensor, specifying the weights ... 2: A 1-D
    // tensor, specifying the bias ... 3: An INT32 scalar ... FuseCode".
    f.push_back({Op::FullyConnected, "", {4}, {in, "weights", b, fuse}});
    // MEAN "1: A 1-D Tensor of TENSOR_INT32. The dimensions to reduce ... 2:
    // An INT32 scalar, keep_dims".
    f.push_back({Op::Mean, "", {3}, {in, "axes", "keep_dims"}});
    // REDUCE_* "1: A 1-D tensor of ANEURALNETWORKS_TENSOR_INT32. The
    // dimensions to reduce ... 2: An ANEURALNETWORKS_BOOL scalar, keep_dims".
    for (Op op : {Op::ReduceSum, Op::ReduceMax, Op::ReduceMin, Op::ReduceProd, Op::ReduceAll,
                  Op::ReduceAny})
      f.push_back({op, "", {3}, {in, "axes", "keep_dims"}});
    // PAD "1: A 2-D Tensor of TENSOR_INT32, the paddings, for each dimension
    // of the input tensor"; PAD_V2 adds "2: A scalar specifying the value to
    // use for padding input0".
    f.push_back({Op::Pad, "", {2}, {in, "paddings"}});
    f.push_back({Op::PadV2, "", {3}, {in, "paddings", "pad value"}});
    // RESHAPE "1: A 1-D tensor of type ANEURALNETWORKS_TENSOR_INT32, defining
    // the shape of the output tensor"; TRANSPOSE "1: An optional 1-D Tensor of
    // ANEURALNETWORKS_TENSOR_INT32, the permutation of the dimensions of the
    // input tensor"; GATHER "1: An ANEURALNETWORKS_INT32 scalar specifying the
    // axis ... 2: A 1-D or multidimensional tensor of
    // ANEURALNETWORKS_TENSOR_INT32 indices"; ARGMAX, ARGMIN "1: An
    // ANEURALNETWORKS_INT32 scalar specifying the axis to reduce across".
    f.push_back({Op::Reshape, "", {2}, {in, "shape"}});
    f.push_back({Op::Transpose, "", {1, 2}, {in, "perm"}});
    f.push_back({Op::Gather, "", {3}, {in, "axis", "indices"}});
    for (Op op : {Op::ArgMax, Op::ArgMin}) f.push_back({op, "", {2}, {in, "axis"}});
    // INSTANCE_NORMALIZATION "1: A scalar, specifying gamma ... 2: ... beta,
    // the offset ... 3: ... epsilon ... 4: An BOOL scalar, default to false.
    // Set to true to specify NCHW data layout".
    f.push_back({Op::InstanceNormalization, "", {5}, {in, "gamma", "beta", "epsilon", nchw}});
    // SLICE "1: A 1-D tensor of type ANEURALNETWORKS_TENSOR_INT32 specifying
    // the beginning indices of the slice in each dimension. 2: A 1-D tensor
    // ... specifying the size of the slice in each dimension"; STRIDED_SLICE
    // "1: ... the starts of the dimensions ... 2: ... the ends ... 3: ... the
    // strides ... 4: An ANEURALNETWORKS_INT32 scalar, begin_mask ... 5: ...
    // end_mask ... 6: ... shrink_axis_mask"; SPLIT "1: An
    // ANEURALNETWORKS_INT32 scalar specifying the axis along which to split.
    // 2: An ANEURALNETWORKS_INT32 scalar indicating the number of splits";
    // TILE "1: multiples, a 1-D tensor of ANEURALNETWORKS_TENSOR_INT32".
    f.push_back({Op::Slice, "", {3}, {in, "begin", "size"}});
    f.push_back({Op::StridedSlice,
                 "",
                 {7},
                 {in, "begin", "end", "strides", "begin_mask", "end_mask", "shrink_axis_mask"}});
    f.push_back({Op::Split, "", {3}, {in, "axis", "num_splits"}});
    f.push_back({Op::Tile, "", {2}, {in, "multiples"}});
    // CONCATENATION "0 ~ n-1: The list of n input tensors ... n: An
    // ANEURALNETWORKS_INT32 scalar, specifying the concatenation axis": one
    // tensor and the axis at the fewest.
    f.push_back({Op::Concatenation, "", {2}, {in, "axis"}, true});
    // MAXIMUM, MINIMUM, the comparisons "0: A tensor. 1: A tensor of the same
    // OperandCode and compatible dimensions with input0"; POW "0: A tensor
    // specifying the base. 1: A tensor specifying the exponent"; LOGICAL_AND,
    // LOGICAL_OR "0: A tensor of TENSOR_BOOL8. 1: A tensor of TENSOR_BOOL8 and
    // dimensions compatible with input0".
    for (Op op : {Op::Maximum, Op::Minimum, Op::Pow, Op::Equal, Op::NotEqual, Op::Less,
                  Op::LessEqual, Op::Greater, Op::GreaterEqual, Op::LogicalAnd, Op::LogicalOr})
      f.push_back({op, "", {2}, {in, "second input"}});
    // The operations of one tensor: "Inputs: 0: A tensor" (RELU ... SIN,
    // LOGICAL_NOT, HARD_SWISH, QUANTIZE, DEQUANTIZE, CAST).
    for (Op op : {Op::Relu, Op::Relu1, Op::Relu6, Op::Logistic, Op::Tanh, Op::HardSwish, Op::Neg,
                  Op::Abs, Op::Floor, Op::Exp, Op::Log, Op::Sqrt, Op::Rsqrt, Op::Sin,
                  Op::LogicalNot, Op::Quantize, Op::Dequantize, Op::Cast})
      f.push_back({op, "", {1}, {in}});
    // PRELU "1: A tensor of the same OperandCode, and compatible dimensions as
    // input0, specifying the alpha"; SELECT "0: A tensor of type TENSOR_BOOL8
    // acting as a mask that chooses ... from input1 (if true) or input2 (if
    // false)"; SQUEEZE "1: An optional 1-D tensor of TENSOR_INT32. The
    // dimensions to squeeze"; EXPAND_DIMS "1: An INT32 scalar specifying the
    // dimension index to expand"; TOPK_V2 "1: k, an INT32 scalar, specifying
    // the number of top elements"; CHANNEL_SHUFFLE "1: An INT32 scalar,
    // specifying the number of groups. 2: An INT32 scalar, specifying the
    // dimension channel shuffle would be performed on".
    f.push_back({Op::Prelu, "", {2}, {in, "alpha tensor"}});
    f.push_back({Op::Select, "", {3}, {"mask", "value if true", "value if false"}});
    f.push_back({Op::Squeeze, "", {1, 2}, {in, "axes"}});
    f.push_back({Op::ExpandDims, "", {2}, {in, "axis"}});
    f.push_back({Op::TopKV2, "", {2}, {in, "k"}});
    f.push_back({Op::ChannelShuffle, "", {3}, {in, groups, "axis"}});
    return f;
  }();
  return facts;
}

TEST(OpSignature, PositionsAsNeuralNetworksHSays) {
  EXPECT_EQ(nnapi::kPaddingSame, 1);  // ANEURALNETWORKS_PADDING_SAME
  EXPECT_EQ(nnapi::kPaddingValid, 2);
  size_t forms = 0;
  for (const FormFacts& want : neural_networks_h_forms()) {
    const std::string what = std::string(nnapi::op_name(want.op)) + " (" + want.form + ")";
    const nnapi::Signature* s = nnapi::signature(want.op);
    ASSERT_NE(s, nullptr) << what;
    const nnapi::Form* got = nullptr;
    for (const nnapi::Form& f : s->forms)
      if (std::string(f.name) == want.form) got = &f;
    ASSERT_NE(got, nullptr) << what;
    ++forms;
    EXPECT_EQ(got->counts, want.counts) << what;
    EXPECT_EQ(got->variadic, want.variadic) << what;
    ASSERT_EQ(got->roles.size(), want.roles.size()) << what;
    for (size_t i = 0; i < want.roles.size(); ++i)
      EXPECT_STREQ(nnapi::role_name(got->roles[i]), want.roles[i]) << what << " input " << i;
  }
  // No form beyond those above.
  size_t table_forms = 0;
  for (int32_t code = 0; code <= static_cast<int32_t>(nnapi::Op::BatchMatmul); ++code)
    if (const nnapi::Signature* s = nnapi::signature_of_code(code)) table_forms += s->forms.size();
  EXPECT_EQ(table_forms, forms);
  // CONCATENATION of n = 1 to 5 tensors: n + 1 inputs, tensors at 0 to
  // n - 1, the axis at n.
  const nnapi::Form& concat = nnapi::signature(nnapi::Op::Concatenation)->forms[0];
  EXPECT_FALSE(concat.allows(1));
  for (size_t n = 1; n <= 5; ++n) {
    ASSERT_TRUE(concat.allows(n + 1)) << n;
    for (size_t i = 0; i < n; ++i)
      EXPECT_STREQ(nnapi::role_name(concat.role_at(i, n + 1)), "input") << n << " " << i;
    EXPECT_STREQ(nnapi::role_name(concat.role_at(n, n + 1)), "axis") << n;
    EXPECT_EQ(concat.at(nnapi::Role::Axis, n + 1), n);
    EXPECT_EQ(concat.at(nnapi::Role::Input, n + 1), 0u);
  }
  // Its axis has no position without the input count.
  EXPECT_EQ(concat.at(nnapi::Role::Axis), nnapi::Form::npos);
}

// Every NNAPI operation the converter emits has its operand signature: each
// `Op::X` the layers that build NNAPI models name (src/lower, src/core) is an
// operation of NeuralNetworks.h with a row in src/nnapi/op_signature.cpp.
TEST(OpSignature, EveryOperationTheLoweringNamesHasOne) {
  // NeuralNetworks.h's name ("TOPK_V2") and the enumerator's ("TopKV2") as
  // one key: upper case, without underscores.
  auto key = [](const std::string& name) {
    std::string k;
    for (char ch : name)
      if (ch != '_') k += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return k;
  };
  std::map<std::string, nnapi::Op> by_key;
  for (int32_t code = 0; code < 256; ++code)
    if (const char* name = nnapi::op_name_or_null(code))
      by_key[key(name)] = static_cast<nnapi::Op>(code);
  std::set<std::string> named;
  const std::regex op_ref(R"(\bOp::([A-Z][A-Za-z0-9]*))");
  for (const char* dir : {"src/lower", "src/core"}) {
    for (const auto& entry :
         std::filesystem::directory_iterator(std::filesystem::path(NNAPI_SOURCE_DIR) / dir)) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".cpp" && ext != ".h") continue;
      std::ifstream in(entry.path());
      const std::string text((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
      for (std::sregex_iterator it(text.begin(), text.end(), op_ref), end; it != end; ++it)
        named.insert((*it)[1].str());
    }
  }
  ASSERT_GT(named.size(), 40u) << "the scan of " << NNAPI_SOURCE_DIR << " found no emitters";
  for (const std::string& name : named) {
    auto it = by_key.find(key(name));
    ASSERT_NE(it, by_key.end()) << "Op::" << name << " names no NNAPI operation";
    const nnapi::Signature* s = nnapi::signature(it->second);
    EXPECT_NE(s, nullptr) << "NNAPI's " << nnapi::op_name(it->second) << " (Op::" << name
                          << ", emitted by src/lower or src/core) has no operand signature in "
                             "src/nnapi/op_signature.cpp";
  }
}

// Forms with the same input count are told apart by the operand types where
// their roles differ in kind.
TEST(OpSignature, FormOfAnInputCountAndTypes) {
  using nnapi::Op;
  using T = nnapi::OperandType;
  auto form = [](Op op, size_t n, size_t at, T type) -> std::string {
    const nnapi::Form* f = nnapi::form_of(*nnapi::signature(op), n, [&](size_t i) {
      return i < 3 ? T::TensorFloat32 : i == at ? type : T::Int32;
    });
    return f ? f->name : "none";
  };
  // CONV_2D, 10 inputs: explicit padding (input 7 the width stride), or
  // implicit with layout flag and dilation (input 7 the BOOL layout flag).
  EXPECT_EQ(form(Op::Conv2d, 10, 7, T::Int32), "explicit padding");
  EXPECT_EQ(form(Op::Conv2d, 10, 7, T::Bool), "implicit padding");
  EXPECT_EQ(form(Op::Conv2d, 8, 7, T::Bool), "implicit padding");
  EXPECT_EQ(form(Op::Conv2d, 11, 10, T::Bool), "explicit padding");
  EXPECT_EQ(form(Op::Conv2d, 9, 7, T::Bool), "none");
  EXPECT_EQ(form(Op::DepthwiseConv2d, 11, 8, T::Int32), "explicit padding");
  EXPECT_EQ(form(Op::DepthwiseConv2d, 11, 8, T::Bool), "implicit padding");
  EXPECT_EQ(form(Op::GroupedConv2d, 9, 8, T::Bool), "implicit padding");
  EXPECT_EQ(form(Op::TransposeConv2d, 9, 8, T::Bool), "implicit padding");
  EXPECT_EQ(form(Op::AveragePool2d, 11, 10, T::Bool), "explicit padding");
  EXPECT_EQ(form(Op::MaxPool2d, 8, 7, T::Bool), "implicit padding");
  auto resize = [](T at1) {
    const nnapi::Form* f = nnapi::form_of(*nnapi::signature(Op::ResizeBilinear), 4, [&](size_t i) {
      return i == 0 ? T::TensorFloat32 : i == 3 ? T::Bool : at1;
    });
    return std::string(f->name);
  };
  EXPECT_EQ(resize(T::Int32), "by size");
  EXPECT_EQ(resize(T::Float32), "by scale");
  EXPECT_EQ(resize(T::Float16), "by scale");
  // CONCATENATION: one tensor and its axis at the fewest, any more tensors.
  EXPECT_EQ(form(Op::Concatenation, 1, 0, T::Int32), "none");
  EXPECT_EQ(form(Op::Concatenation, 2, 1, T::Int32), "");
  EXPECT_EQ(form(Op::Concatenation, 9, 8, T::Int32), "");
}

// An emitter's roles placed at NeuralNetworks.h's positions, whatever the
// order it names them in; a set of roles no form has is refused.
TEST(OpSignature, ArrangeInputsPlacesRoles) {
  using nnapi::Op;
  using R = nnapi::Role;
  EXPECT_EQ(nnapi::arrange_inputs(Op::Conv2d, {{R::Fuse, 90},
                                               {R::Input, 0},
                                               {R::StrideH, 60},
                                               {R::Filter, 10},
                                               {R::PaddingScheme, 30},
                                               {R::Bias, 20},
                                               {R::StrideW, 50}}),
            (std::vector<int32_t>{0, 10, 20, 30, 50, 60, 90}));
  EXPECT_EQ(nnapi::arrange_inputs(Op::MaxPool2d, {{R::Input, 0},
                                                  {R::PadLeft, 1},
                                                  {R::PadRight, 2},
                                                  {R::PadTop, 3},
                                                  {R::PadBottom, 4},
                                                  {R::StrideW, 5},
                                                  {R::StrideH, 6},
                                                  {R::FilterH, 8},
                                                  {R::FilterW, 7},
                                                  {R::Fuse, 9},
                                                  {R::Layout, 10}}),
            (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  // Dilation without the layout flag before it: no form has that.
  EXPECT_TRUE(nnapi::arrange_inputs(Op::Conv2d, {{R::Input, 0},
                                                 {R::Filter, 1},
                                                 {R::Bias, 2},
                                                 {R::PaddingScheme, 3},
                                                 {R::StrideW, 4},
                                                 {R::StrideH, 5},
                                                 {R::Fuse, 6},
                                                 {R::DilationW, 7}})
                  .empty());
  // An output width with a height scale: neither form.
  EXPECT_TRUE(
      nnapi::arrange_inputs(Op::ResizeBilinear, {{R::Input, 0}, {R::OutputW, 1}, {R::ScaleH, 2}})
          .empty());
  EXPECT_TRUE(nnapi::arrange_inputs(Op::Add, {{R::Input, 0}}).empty());
  // CONCATENATION's tensors in the order named, its axis last.
  EXPECT_EQ(nnapi::arrange_inputs(
                Op::Concatenation,
                {{R::Input, 5}, {R::Axis, 9}, {R::Input, 3}, {R::Input, 5}, {R::Input, 7}}),
            (std::vector<int32_t>{5, 3, 5, 7, 9}));
  EXPECT_EQ(nnapi::arrange_inputs(Op::Concatenation, {{R::Input, 4}, {R::Axis, 1}}),
            (std::vector<int32_t>{4, 1}));
  EXPECT_TRUE(nnapi::arrange_inputs(Op::Concatenation, {{R::Axis, 1}}).empty());
  EXPECT_TRUE(nnapi::arrange_inputs(Op::Concatenation, {{R::Input, 4}, {R::Axis, 1}, {R::Axis, 2}})
                  .empty());
  EXPECT_EQ(nnapi::arrange_inputs(Op::StridedSlice, {{R::ShrinkAxisMask, 6},
                                                     {R::Strides, 3},
                                                     {R::Input, 0},
                                                     {R::EndMask, 5},
                                                     {R::End, 2},
                                                     {R::BeginMask, 4},
                                                     {R::Begin, 1}}),
            (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6}));
}
