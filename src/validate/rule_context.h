// The context one operation's rules run in (internal to src/validate): its
// operands, helpers that turn a broken rule into a Finding, the constant
// values of its parameters and the shapes of its inputs.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nnapi_convert/op_signature.h"
#include "nnapi_convert/validate.h"

namespace nnapi_validate {

using T = nnapi::OperandType;

// A tensor's dims as far as they are known: `known` = the rank is known;
// d[k] = -1 where a size is unknown.
struct Shape {
  bool known = false;
  std::vector<int64_t> d;

  static Shape unknown() { return {}; }
  static Shape of(std::vector<int64_t> dims) { return {true, std::move(dims)}; }
  static Shape unknown_of_rank(size_t rank) { return {true, std::vector<int64_t>(rank, -1)}; }
  size_t rank() const { return d.size(); }
  int64_t operator[](size_t k) const { return d.at(k); }
};
// "[1, 16, ?, 16]"
std::string shape_text(const Shape& s);
// The declared dims of a tensor operand as a Shape (empty dims: unknown rank).
Shape declared_shape(const Operand& o);

// Thrown by Check::fail, caught by the driver: the operation's first finding.
struct Failure {
  Rule rule;
  std::string message;
};

class Check {
 public:
  Check(int64_t index, int32_t code, const std::vector<const Operand*>& ins,
        const std::vector<const Operand*>& outs, const std::vector<Shape>* in_shapes,
        const Options* options);

  const char* name() const { return name_; }
  int32_t code() const { return code_; }
  // Values and shapes are checked (finish, or the converter), not only types
  // (addOperation).
  bool full() const { return in_shapes_ != nullptr; }
  bool values() const { return full() && options_->values; }
  bool shapes() const { return full() && options_->shapes; }

  size_t n_in() const { return ins_.size(); }
  size_t n_out() const { return outs_.size(); }
  const Operand& in(size_t i) const { return *ins_.at(i); }
  const Operand& out(size_t o) const { return *outs_.at(o); }
  T type(size_t i) const { return in(i).type; }
  bool omitted(size_t i) const { return i >= n_in() || in(i).lifetime == Lifetime::Omitted; }

  [[noreturn]] void fail(Rule rule, const std::string& what) const;

  // ---- counts, types, ranks (no values needed)
  void input_count(std::initializer_list<size_t> allowed) const;
  void input_count(const std::vector<size_t>& allowed) const;
  // The form of the operation's inputs (op_signature.h), after checking
  // their count against those its forms allow.
  const nnapi::Form& form() const;
  void input_count_at_least(size_t n) const;
  void output_count(size_t n) const;
  void input_type(size_t i, std::initializer_list<T> allowed) const;
  void output_type(size_t o, std::initializer_list<T> allowed) const;
  void same_type(size_t i, size_t j) const;               // input i has input j's type
  void output_same_type(size_t o, size_t i) const;        // output o has input i's type
  void input_rank(size_t i, size_t lo, size_t hi) const;  // when declared
  void output_rank(size_t o, size_t lo, size_t hi) const;
  // Every tensor input and output of declared rank has rank <= hi.
  void max_rank(size_t hi) const;
  // ---- quantization (no values needed)
  // A quantized output o has input i's scale and zero point.
  void same_quant(size_t o, size_t i) const;
  // A quantized output o has this scale and zero point.
  void fixed_quant(size_t o, float scale, int32_t zero_point) const;
  // The bias of a quantized input: zero point 0, scale = input scale x filter scale.
  void bias_quant(size_t bias, size_t input, size_t filter) const;
  // ---- feature level
  // (The reason's text, what followed by more, made only where it raises
  // the level.)
  void needs_level(int level, std::string_view what, std::string_view more = {});
  int level() const { return level_; }
  const std::string& level_reason() const { return level_reason_; }

  // ---- values (when values(); nullopt when the operand is no known constant)
  std::optional<int32_t> i32(size_t i) const;
  std::optional<float> f32(size_t i) const;  // FLOAT32 or FLOAT16 scalar
  std::optional<bool> flag(size_t i) const;
  std::optional<std::vector<int32_t>> ints(size_t i) const;  // a TENSOR_INT32's elements
  // Parameter checks, each a finding when the value is known and breaks it.
  void fuse_code(size_t i) const;
  void at_least(size_t i, int32_t lo, const char* what) const;
  // An axis for a tensor of `rank`, in [-rank, rank) (or [0, rank) when
  // !negative); returns it made non-negative, or -1 when unknown.
  int64_t axis(size_t i, int64_t rank, bool negative, const char* what = "axis") const;

  // ---- shapes (when shapes())
  const Shape& shape(size_t i) const;     // input i: declared dims, completed by inference
  int64_t dim(size_t i, size_t k) const;  // -1 when unknown (or rank unknown)
  void set_output(size_t o, Shape s);
  const std::vector<Shape>& outputs() const { return out_shapes_; }
  // Two known sizes that must be equal; a finding naming `what` otherwise.
  void equal_dims(int64_t a, int64_t b, const std::string& what) const;

 private:
  int64_t index_;
  int32_t code_;
  const char* name_;
  const std::vector<const Operand*>& ins_;
  const std::vector<const Operand*>& outs_;
  const std::vector<Shape>* in_shapes_;
  const Options* options_;
  std::vector<Shape> out_shapes_;
  int level_ = 1;
  std::string level_reason_;
};

// ---- helpers shared by the rule files

// A tensor type an operation takes and the feature level it came with (for
// that operation: NeuralNetworks.h's "(since NNAPI feature level N)").
struct TypeLevel {
  T type;
  int level;
};
// Input i (0 by default) has one of `types`, and the operation needs at least
// the level given with it ("RESHAPE of TENSOR_INT32" needs 6); a type not
// listed is a finding at every level.
void typed(Check& c, std::initializer_list<TypeLevel> types, size_t i = 0);
// Input 0 has one of the types the rule table declares for the operation
// (OpRule::input0, as declared_input_types() gives it).
void typed(Check& c);
// The FLOAT32 or FLOAT16 scalar that goes with a float tensor (input 0).
void float_scalar_for_input(const Check& c, size_t i);
// Output 0 has input 0's shape.
void same_shape_output(Check& c);

// "TENSOR_FLOAT32, TENSOR_FLOAT16 or TENSOR_QUANT8_ASYMM"
std::string type_list(std::initializer_list<T> types);

bool is_quant(T t);  // a quantized tensor type with (scale, zero point)

// ---- shape arithmetic shared by the rules (unknown sizes stay unknown)
// NumPy-style broadcast of two shapes from the trailing dims.
Shape broadcast(const Check& c, const Shape& a, const Shape& b);
// The output size of a convolution or pool along one axis.
int64_t window_out(int64_t in, int64_t filter, int64_t stride, int64_t dilation, int64_t pad_before,
                   int64_t pad_after);
// Implicit padding schemes (NeuralNetworks.h's PaddingCode; op_signature.h).
using nnapi::kPaddingSame;
using nnapi::kPaddingValid;
using R = nnapi::Role;  // an input's role (op_signature.h)
int64_t implicit_out(int32_t scheme, int64_t in, int64_t filter, int64_t stride, int64_t dilation);

// The rules of one operation code.
using RuleFn = void (*)(Check&);
struct OpRule {
  nnapi::Op code;
  RuleFn fn;
  // The tensor types input 0 takes, each with the level it came with: the
  // table typed(c) checks and input_type_level() answers the converter's
  // lowering from. Empty: the rule lists its types itself (and the lowering
  // may not ask about them).
  std::vector<TypeLevel> input0 = {};
};
// Rule tables, one per family file.
void add_elementwise_rules(std::vector<OpRule>& table);
void add_conv_rules(std::vector<OpRule>& table);
void add_shape_rules(std::vector<OpRule>& table);
void add_space_batch_rules(std::vector<OpRule>& table);    // ops_space_batch.cpp
void add_lookup_rules(std::vector<OpRule>& table);         // ops_lookup.cpp
void add_normalization_rules(std::vector<OpRule>& table);  // ops_normalization.cpp
void add_random_rules(std::vector<OpRule>& table);         // ops_random.cpp
void add_detection_rules(std::vector<OpRule>& table);      // ops_detection.cpp
void add_recurrent_rules(std::vector<OpRule>& table);      // ops_recurrent.cpp
const OpRule* find_rule(int32_t code);
// The types the table declares for input 0 of operation `code` (OpRule::input0,
// or what testing::InputTypesOverride puts in its place); nullptr when it
// declares none.
const std::vector<TypeLevel>* declared_input_types(int32_t code);

}  // namespace nnapi_validate
