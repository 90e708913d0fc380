// One NNAPI model validator, shared by the converter (before a model is
// written), the host runtime (ANeuralNetworksModel_addOperation and _finish)
// and `inspect`. It checks a model against the rules of Android's
// NeuralNetworks.h: for every operation the input and output counts, the
// operand types per position, tensor ranks, scalar parameter types and
// values, quantization rules and feature level; the graph (each operand
// written once, read only when available, no cycle, well-formed inputs and
// outputs); and each output's dims, recomputed from its inputs' dims by the
// operation's shape rule and compared with the declared dims.
//
// Plain C++17, no LibTorch: it links only nnapi_types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nnapi_convert/nnapi_types.h"

namespace nnapi_convert {
struct Blob;  // nnapi_convert/blob.h
}

namespace nnapi_validate {

enum class Lifetime { Temporary, ModelInput, ModelOutput, Constant, Omitted };

// One operand as the model declares it.
struct Operand {
  nnapi::OperandType type = nnapi::OperandType::Float32;
  // NNAPI-order dims: 0 = unknown size; empty = a scalar, or a tensor of
  // unknown rank.
  std::vector<uint32_t> dims;
  float scale = 0.0f;
  int32_t zero_point = 0;
  Lifetime lifetime = Lifetime::Temporary;
  // A constant's bytes, when known (not owned); nullptr otherwise.
  const uint8_t* data = nullptr;
  size_t length = 0;
  // TENSOR_QUANT8_SYMM_PER_CHANNEL: the parameters of
  // ANeuralNetworksModel_setOperandSymmPerChannelQuantParams, the dimension
  // the scales run along and one scale per index of it (empty: never set;
  // PyTorch's serialized models cannot carry them).
  uint32_t channel_dim = 0;
  std::vector<float> channel_scales;
};

struct Operation {
  int32_t code = 0;  // nnapi::Op
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
};

// The neutral view of a model that both adapters below produce.
struct Model {
  std::vector<Operand> operands;
  std::vector<Operation> operations;
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
  bool relaxed = false;  // relaxComputationFloat32toFloat16
};

// What a finding breaks.
enum class Rule {
  Graph,         // operand written twice, read before written, cycle, bad model inputs/outputs
  Operand,       // an operand's own declaration (quantization parameters, constant size)
  Operation,     // an operation code NNAPI (or this validator) does not know
  InputCount,    // number of inputs (with the optional ones each operation allows)
  OutputCount,   // number of outputs
  OperandType,   // the type of an input or output
  Rank,          // a tensor's rank
  Parameter,     // a scalar or small-tensor parameter's value (fuse code, stride, axis, ...)
  Quantization,  // scale / zero point rules (equal parameters, bias scale, fixed outputs)
  FeatureLevel,  // an operation or operand type newer than the target feature level
  Shape,         // input dims that do not fit, or an output's dims that differ from the rule
};
const char* rule_name(Rule rule);  // "graph", "operand", "input-count", ...

struct Finding {
  int64_t operation = -1;      // operation index, or -1 for a model-level finding
  std::string operation_name;  // "MUL", or "" for a model-level finding
  Rule rule = Rule::Graph;
  // A sentence a user can read, starting with "operation 17 MUL: " when an
  // operation is concerned.
  std::string message;
};

struct Options {
  // Operations and operand types above this NNAPI feature level are findings.
  int feature_level = nnapi::kMaxFeatureLevel;
  // Recompute output dims and compare them with the declared ones.
  bool shapes = true;
  // Check the values of constant parameters (false: their bytes may be
  // placeholders that a shape-compute script fills in when the model loads).
  bool values = true;
};

// Every finding, at most one per operation (its first), model-level findings
// first. Empty when the model is valid.
std::vector<Finding> validate_model(const Model& model, const Options& options = {});

// Operation indices in an order where producers come before consumers;
// empty when the operations form a
// cycle or an operand index is out of range.
std::vector<size_t> execution_order(const Model& model);

// The checks of one operation that need no constant value: counts, operand
// types, declared ranks and quantization parameters. What the runtime's
// addOperation runs (values may be set later, before finish).
std::optional<Finding> validate_operation_types(int64_t index, int32_t code,
                                                const std::vector<const Operand*>& inputs,
                                                const std::vector<const Operand*>& outputs);

// The feature level an operation needs given its operand types (e.g. ADD of
// TENSOR_INT32 needs level 4, RESHAPE of TENSOR_INT32 level 6), at least
// nnapi::operation_feature_level. `why`, when given, receives what needs
// that level ("RESHAPE of TENSOR_INT32", "HARD_SWISH").
int operation_level(int32_t code, const std::vector<const Operand*>& inputs,
                    const std::vector<const Operand*>& outputs, std::string* why = nullptr);

// ---- What NNAPI accepts, asked by the converter's lowering. The answers
// come from the tables the rules above check models with (the types each
// operation's input 0 takes, src/validate/ops_*.cpp; the operations' own
// levels, nnapi::operation_feature_level), so that a correction to a rule
// changes the lowering's choices too.

// The lowest feature level at which operation `code` takes a tensor of
// `type` as its input 0 (RESHAPE of TENSOR_INT32: 6), at least the
// operation's own; nullopt when it takes it at no level (SQUEEZE of
// TENSOR_INT32). Throws std::invalid_argument for an operation whose rule
// declares no types in the table (a question the lowering must not ask).
std::optional<int> input_type_level(nnapi::Op code, nnapi::OperandType type);
// Whether `code` takes a tensor of `type` as its input 0 at `feature_level`.
bool accepts(nnapi::Op code, nnapi::OperandType type, int feature_level);
// The feature level operation `code` needs with `n_inputs` inputs
// (HARD_SWISH: 4; RESIZE_BILINEAR with align_corners and half_pixel_centers,
// 6 inputs: 4).
int level_with_inputs(nnapi::Op code, int n_inputs);

namespace testing {
// While it lives, the types operation `code`'s input 0 takes (each with the
// level it came with) are `types` instead of the table's: a corrected rule,
// as the validator's checks and the questions above both see it. For unit
// tests; not thread-safe.
class InputTypesOverride {
 public:
  InputTypesOverride(nnapi::Op code, std::vector<std::pair<nnapi::OperandType, int>> types);
  ~InputTypesOverride();
  InputTypesOverride(const InputTypesOverride&) = delete;
  InputTypesOverride& operator=(const InputTypesOverride&) = delete;
};
}  // namespace testing

// TRANSPOSE_CONV_2D's implicit padding along one spatial axis, as NNAPI
// computes it from the requested output size (input 3) rather than the input
// size: SAME pads ((requested + stride - 1) / stride - 1) * stride + kernel -
// requested in all, half (rounded down, at least 0) before and the rest
// after, which is negative when the request exceeds the natural size (the
// extra positions hold the bias alone); VALID pads nothing. The output size
// is (input - 1) * stride + kernel - before - after. Shared by the rule and
// the runtime's kernel.
void transpose_conv_implicit_padding(int32_t scheme, int64_t requested, int64_t kernel,
                                     int64_t stride, int64_t* before, int64_t* after);

// The view of a parsed blob. `buffers` are the weight buffers (data, size) a
// numbered-buffer value points into; a value whose buffer is missing has no
// bytes in the view (data == nullptr). The view points into `blob` and
// `buffers`, which must outlive it.
Model model_of_blob(const nnapi_convert::Blob& blob,
                    const std::vector<std::pair<const uint8_t*, size_t>>& buffers = {});

// "operation 17 MUL (rank): input 0 has rank 5; ..." on one line.
std::string describe(const Finding& finding);

}  // namespace nnapi_validate
