// The data of a conversion, shared by every layer: what the user asked for
// (ConvertOptions), what the lowering produced (Conversion), and the error a
// user can act on (ConvertError). No LibTorch beyond ATen's Tensor.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "nnapi_convert/input_spec.h"

namespace nnapi_convert {

// A node kind of a model: how many nodes, where in the user's code (file:line,
// each place once), and whether nnapi-convert lowers it.
struct NodeKindCount {
  std::string kind;  // "aten::conv2d"
  int64_t count = 0;
  bool supported = false;
  std::vector<std::string> locations;
  std::string first_node;  // the first such node as TorchScript prints it
};

// A failure the user can act on. exit_code: 1 = the model cannot be
// converted, 2 = a usage error (bad arguments or specs).
class ConvertError : public std::runtime_error {
 public:
  ConvertError(int exit_code, const std::string& message, std::string node = "",
               std::string location = "")
      : std::runtime_error(message),
        exit_code_(exit_code),
        node_(std::move(node)),
        location_(std::move(location)) {}
  int exit_code() const { return exit_code_; }
  // The graph node that could not be lowered (its kind) and its source
  // location (file:line), when the failure is a node's.
  const std::string& node() const { return node_; }
  const std::string& location() const { return location_; }
  // The node kinds nnapi-convert cannot lower, when that is the failure.
  const std::vector<NodeKindCount>& unsupported() const { return unsupported_; }
  void set_unsupported(std::vector<NodeKindCount> kinds) { unsupported_ = std::move(kinds); }

 private:
  int exit_code_;
  std::vector<NodeKindCount> unsupported_;
  std::string node_;
  std::string location_;
};

// --quantize uint8: post-training quantization of a float model
// (src/quantize/quantize.h).
struct QuantizeOptions {
  bool enabled = false;
  std::string calibration_file;  // torch.save'd tensor (a batch) or list of input tuples
  std::string calibration_dir;   // a directory of such .pt files, or of PNG/JPEG images
  std::vector<double> mean,
      stddev;  // --mean, --std: images: per channel, in pixel/255 units (empty: 0 and 1)
  std::string method = "histogram";  // minmax | histogram
  int64_t holdout = 0;               // the last N samples: not calibrated on, only measured
  std::vector<std::string> skip;     // node kinds (aten::add) or value names (%x.3) kept float
  double min_sqnr = 20;              // --verify fails when an output's SQNR is lower (dB)
  bool quantized_io = false;         // the module takes and returns quint8 tensors
};

struct ConvertOptions {
  std::string model_path;
  // The tensors the NNAPI model takes, in order: one per tensor argument, a
  // List/Tuple argument's items in its place (tensor_specs(args)).
  std::vector<InputSpec> inputs;
  // Per forward argument, as given (--input int=16000, list=..., none), when
  // one of them is not a single tensor; empty when every one is.
  std::vector<ArgSpec> args;
  // --eval: every module set to eval mode before freezing.
  bool eval = false;
  // --submodule PATH (dotted), --method NAME: the entry point converted in
  // place of the model's forward (empty: the model itself, forward).
  std::string submodule;
  std::string method;
  bool nhwc = false;  // every 4-D input is channels-last
  bool use_int16_for_qint16 = false;
  int compilation_preference = 2;  // sustained speed
  bool relax_f32_to_f16 = false;
  // Fold a ReLU / ReLU6 that is the only use of a convolution, fully connected
  // or ADD/SUB/MUL/DIV result into that operation's fused activation (fewer
  // operations; the reference never does, so the blob differs from its).
  bool fuse_activations = false;
  // The oldest Android the model must run on (API level, 29 to 35): NNAPI
  // operations newer than that are decomposed into older ones or refused.
  int min_android_api = 29;
  std::vector<std::vector<int64_t>> return_shapes;  // per output; empty = from the model
  // Nodes NNAPI cannot run stay TorchScript; the runs of nodes between them
  // become NNAPI models called from the converted module (needs fixed sizes).
  bool cpu_fallback = false;
  QuantizeOptions quantize;
  // --lite-bytecode-version: the bytecode version of the lite-interpreter
  // copy (kOldestLiteBytecodeVersion to kNewestLiteBytecodeVersion; 0:
  // LibTorch's own, the newest).
  int lite_bytecode_version = 0;
  // --float16: weights and computation as TENSOR_FLOAT16 (core/float16.h),
  // float32 inputs and outputs CAST inside the model; --float16-io: the
  // converted module takes and returns float16 (implies float16).
  bool float16 = false;
  bool float16_io = false;
};

struct PhaseTimes {
  // validate: NeuralNetworks.h's rules checked on the serialized model (and,
  // for a model with load-time sizes, on its blob at sample sizes).
  double load_ms = 0, freeze_ms = 0, lower_ms = 0, serialize_ms = 0, validate_ms = 0, write_ms = 0;
};

// One return value's template: what `prepare` builds for it.
struct OutputTemplate {
  int32_t operand;
  int32_t type;  // nnapi::OperandType
  std::vector<int64_t> shape;
  double scale;
  int64_t zero_point;
};

// A tensor attribute of the model that forward reads and writes back
// (`self._state = new_state`): state kept between calls (src/core/state.h).
// The NNAPI model takes it as an input after the user's and returns its new
// value as an output after the user's; the converted module keeps it as an
// attribute of the same name and writes the new value back after each call.
struct StateAttribute {
  std::string name;    // the attribute, "_state"
  at::Tensor initial;  // its value in the model file: the converted module's first state
  std::string node;    // where forward writes it: "node prim::SetAttr at vad.py:12 (`...`)"
  // What the NNAPI model takes on the first call: `initial` after the
  // TorchScript part that runs first (StateProgram::prologue; a reset on
  // the first call), of the shape and dtype every call passes. `initial`
  // itself without one.
  at::Tensor first;
};

// One argument of the converted entry point when ConvertOptions::args is
// given: the model's name for it, its type there (TorchScript's annotation)
// and what it was given as. The converted module's forward takes it again.
struct EntryArgument {
  std::string name;
  std::string type;
  ArgSpec spec;
};

// Parses the --input specs of one model (or a manifest entry's "inputs")
// into `options`: `inputs` and `args`. Throws SpecError.
void set_input_specs(ConvertOptions& options, const std::vector<std::string>& specs);

// Where an NNAPI operation came from: the TorchScript node it was lowered
// from, by kind ("aten::conv2d"), and that node's place in the user's code
// ("model.py:12", as the converter's messages name it; "" when the model
// records none). Both "" for an operation no node made (--float16's CASTs at
// the model's inputs and outputs).
struct NodeOrigin {
  std::string kind;
  std::string location;
};

struct FallbackGraph;   // src/core/fallback.h
struct StateProgram;    // src/serialize/state_program.h
struct QuantizedModel;  // src/quantize/quantize.h

struct Conversion {
  std::vector<int32_t> ser_model;
  std::vector<at::Tensor> weights;
  std::vector<int64_t> inp_mem_fmts;
  std::vector<int64_t> out_mem_fmts;
  // The body of `prepare` before its return statement, as the reference writes it.
  std::vector<std::string> shape_lines;
  std::vector<OutputTemplate> templates;
  int retval_count = -1;  // -1: a single tensor is returned
  // The model's state (StateAttribute): the NNAPI model's last inputs and
  // outputs, after the user's (retval_count counts the user's outputs only).
  std::vector<StateAttribute> state;
  // What the converted module runs in TorchScript for the state: the int,
  // float and bool attributes it keeps, the branches on them, the model's
  // own reset methods. Null without state, or when the state needs none.
  std::shared_ptr<const StateProgram> state_program;
  // The outputs whose NNAPI operand has another shape than the model's
  // result, by output index: a 0-dim result is NNAPI shape (1) (NNAPI has no
  // rank-0 tensors), a result of rank > 4 a rank <= 4 buffer of the same
  // elements (NNAPI operations take rank <= 4). The converted module's
  // forward reshapes them to these (fixed) shapes.
  std::map<int, std::vector<int64_t>> output_reshapes;
  // Outputs the converted module's forward casts, by output index, to "bool"
  // or "int64" (torch.<dtype>): bool outputs NNAPI returns as int32 0/1 (PyTorch's NNAPI
  // binding takes no bool tensors), int64 ones (indices) it computes in
  // int32.
  std::map<int, std::string> output_casts;
  int64_t operand_count = 0;
  int64_t operation_count = 0;
  std::map<std::string, int> operations;  // NNAPI operation name -> count
  // Per NNAPI operation, in model order: the node it came from (written into
  // the output's metadata record, shown by inspect).
  std::vector<NodeOrigin> origins;
  int64_t weight_bytes = 0;
  // The NNAPI feature level the model needs, and the oldest Android API level
  // that has it (never below 29, which PyTorch's NNAPI runtime needs).
  int feature_level = 0;
  int android_api = 0;
  PhaseTimes times;
  // --cpu-fallback, when some nodes stay TorchScript: one conversion per NNAPI
  // segment, the graph that calls them, and the nodes left to TorchScript by
  // kind. Then ser_model, weights and templates above are empty and the
  // counts are the segments' sums.
  std::vector<Conversion> segments;
  std::shared_ptr<const FallbackGraph> fallback;
  std::vector<NodeKindCount> cpu_kinds;
  // With ConvertOptions::args: each argument of the entry point (values the
  // graph was specialized on too); empty otherwise.
  std::vector<EntryArgument> arguments;
  // What the user should know about how the model was read (training mode,
  // --eval, the entry point), one sentence each.
  std::vector<std::string> notes;
  // --quantize: the plan, scales and graphs the proof runs.
  std::shared_ptr<const QuantizedModel> quantized;
  // --float16-io: the converted module's float inputs and outputs are
  // float16 (its forward hands the inputs to NNAPI as float32, which
  // PyTorch's NNAPI binding requires; the NNAPI outputs are TENSOR_FLOAT16).
  bool float16_io = false;
};

}  // namespace nnapi_convert
