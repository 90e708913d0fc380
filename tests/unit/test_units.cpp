// Unit tests: the --input spec language, Python float repr, NNAPI feature levels.
#include <gtest/gtest.h>

#include "nnapi_convert/input_spec.h"
#include "nnapi_convert/nnapi_types.h"
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
