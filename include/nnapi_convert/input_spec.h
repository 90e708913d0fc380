// The `--input SPEC` language: DIMS[,dtype=...][,scale=S][,zero_point=Z][,nhwc]
// for a tensor; int=N, float=X, bool=true|false, none for a value the graph is
// specialized on; list=SPEC+SPEC... and tuple=SPEC+SPEC... for a List[Tensor]
// or Tuple[Tensor, ...] argument. Torch-free, so the fuzzer can build it alone.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace nnapi_convert {

// Bool: a model's bool input (a padding mask); NNAPI gets it as TENSOR_INT32
// 0/1, which the converted module makes of it (PyTorch's NNAPI binding takes
// no bool tensors).
enum class InputDType { Float32, Int32, QUInt8, Int16, Bool };

struct InputSpec {
  std::vector<int64_t> dims;  // PyTorch (NCHW) order; 0 marks a flexible dimension
  InputDType dtype = InputDType::Float32;
  double scale = 0.0;
  int64_t zero_point = 0;
  bool has_scale = false;
  bool has_zero_point = false;
  bool nhwc = false;  // the tensor is channels-last (requires 4 dims)
  std::string text;   // the spec as the user wrote it
};

// A spec the user wrote wrong. what() is a one-line explanation that names the spec.
class SpecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses one spec. Throws SpecError naming the spec and what is wrong.
InputSpec parse_input_spec(const std::string& text);

// The inverse: a canonical spec string (round-trips through parse_input_spec).
std::string format_input_spec(const InputSpec& spec);

const char* dtype_name(InputDType dtype);

// What one forward argument is given as (one --input, one manifest "inputs"
// entry): a tensor, a value the converted graph is specialized on (the
// argument then is no NNAPI input), or a List/Tuple of tensors, each of which
// becomes an NNAPI input.
enum class ArgKind { Tensor, Int, Float, Bool, None, List, Tuple };

struct ArgSpec {
  ArgKind kind = ArgKind::Tensor;
  std::vector<InputSpec> tensors;  // Tensor: its spec; List, Tuple: the items' specs
  int64_t int_value = 0;
  double float_value = 0;
  bool bool_value = false;
  std::string text;  // the spec as the user wrote it
};

// Parses one argument spec (a tensor spec, int=N, float=X, bool=true|false,
// none, list=SPEC+SPEC..., tuple=SPEC+SPEC...). Throws SpecError naming it.
ArgSpec parse_arg_spec(const std::string& text);

// The canonical text of an argument spec (round-trips through parse_arg_spec).
std::string format_arg_spec(const ArgSpec& spec);

// "a tensor", "an int", ..., for messages.
const char* arg_kind_text(ArgKind kind);

// The tensors of the arguments in order, a list's items in its place: the
// NNAPI model's inputs.
std::vector<InputSpec> tensor_specs(const std::vector<ArgSpec>& args);

// Whether every argument is a single tensor (the converter then works as
// it did before non-tensor arguments existed, byte for byte).
bool all_tensors(const std::vector<ArgSpec>& args);

// Sizes joined by 'x' ("1x3x224x224"), each from `min_size` to 2^31-1. Returns
// false and a reason naming the bad part; used by --return-shape and
// --verify-shape.
bool parse_x_dims(const std::string& text, int64_t min_size, std::vector<int64_t>* dims,
                  std::string* why);

}  // namespace nnapi_convert
