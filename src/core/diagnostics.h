// Diagnostics of a conversion: where in the user's code a graph node came
// from, the node as TorchScript prints it, and the messages that name them
// (unsupported node kinds, a node lowered above the target API level, a
// float input for a quantized model).
#pragma once

#include <torch/csrc/jit/ir/ir.h>

#include <exception>
#include <string>
#include <vector>

#include "lower/context.h"
#include "nnapi_convert/conversion.h"

namespace nnapi_convert {

// "model.py:12", or "" (the innermost frame in the user's code).
std::string node_location(const torch::jit::Node* node);
// node_location, or "" when LibTorch cannot read the model's debug records
// (then *readable is set false: no other node's place can be read either).
std::string place_or_empty(const torch::jit::Node* node, bool* readable);
// The node as TorchScript prints it, in backquotes (a node with blocks: its first line).
std::string node_text(const torch::jit::Node* node);
// "node aten::foo at model.py:12 (`...`)"
std::string describe_node(const torch::jit::Node* node);
// Per NNAPI operation, the kind and place of the node it was lowered from
// (`op_nodes[k]`; nullptr: an operation no node made).
std::vector<NodeOrigin> operation_origins(const std::vector<const torch::jit::Node*>& op_nodes);
// The error for a node that failed to lower (`current`), or for the model's
// return when `current` is the return node `ret`.
ConvertError node_error(const std::string& path, const torch::jit::Node* ret,
                        const torch::jit::Node* current, const std::string& what);

// The kinds of `nodes`, in order of first use, with counts and places.
std::vector<NodeKindCount> census_of(const std::vector<const torch::jit::Node*>& nodes);
// Every node kind of the graph, in order of first use.
std::vector<NodeKindCount> census(const torch::jit::Graph& graph);
// Throws ConvertError (exit 1) naming every node kind of `graph` that nothing
// lowers or folds, each with its count and places.
void check_supported(const torch::jit::Graph& graph, const std::string& path);

// The error TorchScript code raised, as one paragraph: a c10::Error without
// its C++ backtrace; for the interpreter's report of a failed operation (a
// std::runtime_error with TorchScript tracebacks), the error at its end.
std::string script_error_text(const std::exception& e);

// A node lowered to an operation newer than --min-android-api allows.
[[noreturn]] void fail_above_target(const ModelBuilder::OverLimit& over,
                                    const ConvertOptions& options);
// A quantized:: node reading a float32 operand: the model takes quantized
// input, but its --input spec is float.
// Whether `kind` (e.g. "quantized::linear_dynamic") is an operation of
// dynamic quantization (quantize_dynamic): it takes float tensors and
// quantizes them itself at run time (quantized::*_dynamic,
// aten::quantized_lstm, aten::quantized_gru).
bool is_dynamic_quantization_kind(const std::string& kind);

void check_quantized_inputs(const LoweringContext& cx, const torch::jit::Node* node,
                            const std::vector<int32_t>& input_ids);

}  // namespace nnapi_convert
