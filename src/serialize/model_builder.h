// An NNAPI model under construction, and its serialization into the blob
// format that PyTorch's NNAPI runtime (nnapi_model_loader.cpp) reads.
// Knows NNAPI and nothing of TorchScript.
#pragma once

#include <ATen/Tensor.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "nnapi_convert/nnapi_types.h"

namespace nnapi_convert {

// One NNAPI operand as the device sees it.
struct NnapiOperand {
  nnapi::OperandType type;
  // NNAPI-order dimensions: 0 = fixed when the model is loaded (patched by
  // the shape-compute script), -1 = known only at run time (serialized as 0).
  std::vector<int64_t> dims;
  double scale = 0.0;
  int64_t zero_point = 0;
  // For each dim that is 0: the shape-compute variable that holds its size.
  std::vector<std::string> flex_symbols;
};

struct SerializedModel {
  std::vector<int32_t> words;            // the blob
  std::vector<std::string> patch_lines;  // `ser_model[i] = s_x_y` lines for load-time sizes
};

class ModelBuilder {
 public:
  int32_t next_operand_id() const { return static_cast<int32_t>(operands_.size()); }
  const NnapiOperand& operand(int32_t id) const { return operands_.at(id); }
  size_t operand_count() const { return operands_.size(); }
  size_t operation_count() const { return operations_.size(); }

  // A tensor operand whose value is computed or fed at run time.
  int32_t add_operand(NnapiOperand operand);

  // A constant operand whose bytes live in the next weight buffer.
  // `tensor` is stored as given (the runtime makes it contiguous), its byte size
  // is taken from the operand's type and dims.
  int32_t add_weight(NnapiOperand operand, at::Tensor tensor);

  // Immediate scalars and vectors, deduplicated by (type, bytes).
  int32_t add_immediate(nnapi::OperandType type, std::vector<uint8_t> bytes,
                        std::vector<int64_t> dims);
  int32_t add_int_scalar(int32_t v);
  int32_t add_float_scalar(float v);
  int32_t add_bool_scalar(bool v);
  int32_t add_int_vector(const std::vector<int64_t>& v);
  // A 1-D TENSOR_INT32 immediate, never shared, whose element i is set at
  // load time to the shape-compute expression patches[i] (where given).
  // With `dims`, a TENSOR_INT32 of those dims (row-major elements), as PAD's
  // paddings ((rank, 2)) are.
  int32_t add_patched_int_vector(const std::vector<int64_t>& v,
                                 const std::vector<std::pair<size_t, std::string>>& patches,
                                 std::vector<int64_t> dims = {});
  // A TENSOR_INT32 immediate of `dims` holding `v` in row-major order.
  int32_t add_int_tensor(const std::vector<int64_t>& v, std::vector<int64_t> dims);

  void add_operation(nnapi::Op op, const std::vector<int32_t>& inputs,
                     const std::vector<int32_t>& outputs);
  void add_input(int32_t id) { inputs_.push_back(id); }
  void add_output(int32_t id) { outputs_.push_back(id); }

  // Operations above `level` are still added, and the first one is kept for
  // the caller to report (see first_over_limit).
  void set_feature_level_limit(int level) { level_limit_ = level; }
  // The highest NNAPI feature level of the operations and operand types so far.
  int feature_level() const { return feature_level_; }
  struct OverLimit {
    nnapi::Op op;
    int level;
    std::string why;  // what needs the level: "RESHAPE", "RESHAPE of TENSOR_INT32"
  };
  // The first operation that needed more than the limit, if any.
  const std::optional<OverLimit>& first_over_limit() const { return over_limit_; }

  // The operands whose values the shape-compute script patches when the model
  // loads (add_patched_int_vector): their bytes in the blob are placeholders.
  std::vector<int32_t> patched_operands() const;

  std::vector<at::Tensor> take_weights() { return std::move(weights_); }
  // Operation counts by NNAPI operation name, for reports.
  std::map<std::string, int> operation_histogram() const;

  SerializedModel serialize() const;

  // ---- Rewriting the finished model (--float16, core/float16.cpp).
  struct OperationView {
    nnapi::Op op;
    std::vector<int32_t> inputs, outputs;
  };
  OperationView operation(size_t index) const;
  const std::vector<int32_t>& model_inputs() const { return inputs_; }
  const std::vector<int32_t>& model_outputs() const { return outputs_; }
  void set_operand_type(int32_t id, nnapi::OperandType type) { operands_.at(id).type = type; }
  void set_operation_input(size_t index, size_t position, int32_t id);
  void set_model_output(size_t k, int32_t id) { outputs_.at(k) = id; }
  // Adds an operation before operation `index` (the ones from there move up
  // by one).
  void insert_operation(size_t index, nnapi::Op op, const std::vector<int32_t>& inputs,
                        const std::vector<int32_t>& outputs);
  // A constant's value (a weight buffer or an immediate) of TENSOR_FLOAT32
  // made TENSOR_FLOAT16, each element rounded to the nearest half (ties to
  // even); the operand's type too. False when `id` is no constant.
  bool constant_to_float16(int32_t id);
  // The largest |value| of constant TENSOR_FLOAT32 or FLOAT32 `id` that is
  // finite but beyond float16's range (it would round to infinity), float32's
  // largest magnitude (a sentinel: infinity in float16) aside; nullopt when
  // none is, or `id` is no constant.
  std::optional<float> float16_overflow(int32_t id) const;
  // The value of an immediate FLOAT32 scalar; nullopt for anything else.
  std::optional<float> float32_scalar(int32_t id) const;
  int32_t add_half_scalar(float v);  // a FLOAT16 scalar, rounded to nearest even
  void raise_feature_level(int level) { feature_level_ = std::max(feature_level_, level); }

 private:
  struct Value {
    int32_t operand;
    nnapi::ValueSource source;
    std::vector<uint8_t> data;
    std::vector<std::pair<size_t, std::string>> patches;  // int32 element -> expression
  };
  struct Operation {
    nnapi::Op op;
    int32_t n_inputs;
    int32_t n_outputs;
  };

  std::vector<NnapiOperand> operands_;
  std::vector<Value> values_;
  std::vector<Operation> operations_;
  std::vector<int32_t> operation_args_;
  size_t args_offset(size_t index) const;  // where operation `index`'s ids start
  std::vector<int32_t> inputs_;
  std::vector<int32_t> outputs_;
  std::vector<at::Tensor> weights_;
  std::map<std::pair<int32_t, std::vector<uint8_t>>, int32_t> immediates_;
  // The scalar immediates among them by (type << 32 | bits): looked up
  // without building a key vector (a convolution adds about ten).
  std::unordered_map<uint64_t, int32_t> scalars_;
  int32_t add_scalar(nnapi::OperandType type, uint32_t bits, size_t bytes);
  int feature_level_ = nnapi::kMinFeatureLevel;
  int level_limit_ = nnapi::kMaxFeatureLevel;
  std::optional<OverLimit> over_limit_;
};

}  // namespace nnapi_convert
