// Model, compilation and memory objects of the host NNAPI runtime.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "nnapi_convert/nnapi_types.h"
#include "nnapi_convert/validate.h"

namespace nnrt {

using nnapi::OperandType;
using nnapi::Result;

// Thrown inside the runtime, turned into a ResultCode at the C boundary.
// `operation`: the index of the operation it concerns (the one being added,
// checked or computed), or -1.
class NnError : public std::runtime_error {
 public:
  NnError(Result code, const std::string& msg, int64_t operation = -1)
      : std::runtime_error(msg), code_(code), operation_(operation) {}
  Result code() const { return code_; }
  int64_t operation() const { return operation_; }

 private:
  Result code_;
  int64_t operation_;
};

[[noreturn]] void fail(Result code, const std::string& msg);
// Throws `e` again as concerning operation `operation`.
[[noreturn]] void fail_at(size_t operation, const NnError& e);
// Throws BAD_DATA with `msg` unless `cond`.
void require(bool cond, const std::string& msg);

// A region of a file mapped with ANeuralNetworksMemory_createFromFd.
struct Memory {
  void* base = nullptr;  // what mmap returned
  size_t size = 0;
  ~Memory();
  const uint8_t* data() const { return static_cast<const uint8_t*>(base); }
};

enum class Lifetime { Temporary, ModelInput, ModelOutput, Constant, NoValue };

struct Operand {
  OperandType type = OperandType::Float32;
  std::vector<uint32_t> dims;  // 0 = unknown dimension; empty = scalar or unknown rank
  float scale = 0.f;
  int32_t zero_point = 0;
  Lifetime lifetime = Lifetime::Temporary;
  // Constant value: either an owned copy or a window into a Memory.
  std::vector<uint8_t> bytes;
  std::shared_ptr<Memory> memory;
  size_t memory_offset = 0;
  size_t length = 0;
  int producer = -1;  // index of the operation writing this operand, if any
  // TENSOR_QUANT8_SYMM_PER_CHANNEL (setOperandSymmPerChannelQuantParams).
  uint32_t channel_dim = 0;
  std::vector<float> channel_scales;

  const uint8_t* value_data() const {
    return memory ? memory->data() + memory_offset : bytes.data();
  }
  bool is_tensor() const { return nnapi::is_tensor_type(type); }
  bool fully_specified() const;
  // Byte size for the declared dims, or 0 when some dimension is unknown.
  size_t byte_size() const;
};

struct OpKernel;

struct Operation {
  int32_t code = 0;
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
  const OpKernel* kernel = nullptr;
};

class Model {
 public:
  void add_operand(const Operand& operand);
  void set_value(int32_t index, const void* buffer, size_t length);
  void set_value_from_memory(int32_t index, std::shared_ptr<Memory> memory, size_t offset,
                             size_t length);
  void add_operation(int32_t code, std::vector<uint32_t> inputs, std::vector<uint32_t> outputs);
  void identify_inputs_outputs(std::vector<uint32_t> inputs, std::vector<uint32_t> outputs);
  void relax_float32_to_float16(bool allow);
  // setOperandSymmPerChannelQuantParams: only for a TENSOR_QUANT8_SYMM_PER_CHANNEL
  // operand, a channel dimension below its rank and one scale (> 0) per index.
  void set_channel_quant(int32_t index, uint32_t channel_dim, std::vector<float> scales);
  void finish();

  bool finished() const { return finished_; }
  // relaxComputationFloat32toFloat16 was set (executions then round float32
  // results to float16, see relaxed_float16_rounding in execution.cpp).
  bool relaxed() const { return relaxed_; }
  const std::vector<Operand>& operands() const { return operands_; }
  const std::vector<Operation>& operations() const { return operations_; }
  const std::vector<uint32_t>& inputs() const { return inputs_; }
  const std::vector<uint32_t>& outputs() const { return outputs_; }
  // Operation indices in an order where producers come before consumers.
  const std::vector<size_t>& schedule() const { return schedule_; }
  // The model as the validator sees it (views into this model's values).
  nnapi_validate::Model validation_model() const;

 private:
  void require_not_finished() const;
  Operand& operand_at(int64_t index);

  std::vector<Operand> operands_;
  std::vector<Operation> operations_;
  std::vector<uint32_t> inputs_, outputs_;
  std::vector<size_t> schedule_;
  bool identified_ = false;
  bool finished_ = false;
  bool relaxed_ = false;
};

struct Compilation {
  std::shared_ptr<const Model> model;
  int32_t preference = static_cast<int32_t>(nnapi::Preference::FastSingleAnswer);
  bool finished = false;
};

// The operand as the validator sees it (a view of a constant's bytes).
nnapi_validate::Operand validation_view(const Operand& operand);

// Checks an operand-type record handed to addOperand or to setInput.
Operand operand_from_type(int32_t type, uint32_t dimension_count, const uint32_t* dimensions,
                          float scale, int32_t zero_point);

}  // namespace nnrt
