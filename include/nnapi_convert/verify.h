// `nnapi-convert --verify`: run the original TorchScript model and the
// converted NNAPI module side by side (the converted one on the host NNAPI
// runtime, libneuralnetworks.so) and compare their outputs.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nnapi_convert/conversion.h"
#include "nnapi_convert/input_spec.h"

namespace nnapi_convert {

// Quantized models for NNAPI are made for QNNPACK, PyTorch's mobile engine
// (test_nnapi.py sets it, so do the fixtures); x86 builds default to oneDNN,
// which rounds ties to even where QNNPACK and NNAPI round them away from
// zero. This selects QNNPACK for its lifetime.
class QnnpackEngine {
 public:
  QnnpackEngine();
  ~QnnpackEngine();
  QnnpackEngine(const QnnpackEngine&) = delete;
  QnnpackEngine& operator=(const QnnpackEngine&) = delete;

 private:
  int saved_;
};

struct VerifyOptions {
  // Per input, in --input order: the run-time shape (PyTorch order). Empty:
  // every flexible dimension takes its default size (see default_verify_size).
  // When given, there must be one per input and every dimension the --input
  // spec fixes must have the same size.
  std::vector<std::vector<int64_t>> shapes;
  // Float outputs pass when |nnapi - eager| <= atol + rtol * |eager| everywhere.
  double atol = 1e-4;
  double rtol = 1e-4;
  // Quantized outputs (and float outputs produced by a DEQUANTIZE) pass when no
  // element is off by more than one quantum and at most this share of the
  // elements is off by one quantum (test_nnapi.py's limit: 3% of the output).
  double max_off_by_one_share = 0.03;
  uint64_t seed = 0;  // torch::manual_seed before the inputs are drawn
  // A torch.save'd tensor, or tuple or list of tensors (one per input): the
  // inputs to run instead of random ones (`shapes` and `seed` are then unused).
  std::string input_file;
  // libneuralnetworks.so to load; empty = search (see load_nnapi_runtime).
  std::string runtime_library;
  // --verify-strict: an output whose check proves little (a constant output
  // would pass it: OutputCheck::warning) fails instead of passing with a warning.
  bool strict = false;
  // float16 computation (--float16, --relax-f32-to-f16): how many NNAPI
  // operations round their results to float16 (relaxed_tolerances counts
  // them). When > 0, a float output that fails the element-by-element rule
  // still passes when its error, measured against the model output's RMS, is
  // within float16_rms_bound(): rms(nnapi - model) <= L * u * rms(model),
  // u = 2^-11 (float16's unit roundoff), L = float16_roundings.
  int64_t float16_roundings = 0;
};

// float16's unit roundoff: half the distance from 1 to the next float16
// (10 fraction bits), the largest relative error of one rounding to nearest.
constexpr double kFloat16UnitRoundoff = 1.0 / 2048.0;

// The RMS-relative bound of float16 computation: L * u for L operations that
// each round their result to float16 (first-order worst case: each rounding
// a relative error of at most u of the signal it rounds, every error carried
// to the output with unit gain and adding up without cancelling, Higham's
// gamma_L ~ L * u). 0 when options.float16_roundings is 0 (not used).
double float16_rms_bound(const VerifyOptions& options);

// The start of OutputCheck::problem when only --verify-strict failed the
// output (its warning follows).
inline constexpr const char* kVerifyStrictProblem =
    "--verify-strict fails a check that proves little: ";

// How one output compares.
struct OutputCheck {
  // What was compared, for a stateful model's sequence of calls ("call 2
  // output 0", "call 2 state _state"); empty: output <index>.
  std::string name;
  std::vector<int64_t> shape;  // the eager output's shape
  std::string dtype;           // the eager output's dtype, e.g. "Float", "QUInt8"
  bool quantized = false;      // a quantized tensor: compared as int_repr
  double quantum = 0;          // quantized, or dequantized by the model's last op: its scale
  double max_abs_err = 0;      // in real units (quantized: dequantized)
  double max_rel_err = 0;      // max |a - b| / |b| over elements with b != 0
  // Float outputs: rms(a - b) / rms(b) (0 when b is all zero).
  double rms_rel_err = 0;
  // The rule a float output passed or failed: "elementwise" (atol + rtol *
  // |model|), or "float16 rms" (it failed elementwise and was judged by
  // rms_rel_err <= rms_bound: VerifyOptions::float16_roundings).
  std::string rule;
  double rms_bound = 0;    // rule "float16 rms": the bound
  int64_t max_quanta = 0;  // quantum > 0: the largest difference in quanta
  int64_t off_by_one = 0;  // quantum > 0: elements off by at least one quantum
  int64_t numel = 0;
  bool ok = false;
  std::string problem;  // why not ok, one line; empty when ok
  std::string warning;  // a check that proves little (a constant output), or empty

  double off_by_one_share() const { return numel ? double(off_by_one) / double(numel) : 0.0; }
};

// Where a mismatch starts: the first NNAPI operation whose result differs
// from what eager PyTorch computes for the TorchScript value it holds
// (operations whose results hold no TorchScript value, such as a TRANSPOSE
// the converter adds, are not compared).
struct Divergence {
  std::string error;       // not empty: the operation could not be located, and why
  int64_t operation = -1;  // its index in the NNAPI model; -1: no compared operation diverges
  std::string type;        // its NNAPI operation type, e.g. "AVERAGE_POOL_2D"
  std::string node;        // the node kind it was lowered from, e.g. "aten::avg_pool2d"
  std::string source;      // where the user's code made that node, "model.py:12", or ""
  std::string code;        // the code there (for a traced model: the node as TorchScript prints it)
  std::string value;       // the TorchScript value compared, e.g. "%input.3"
  std::string tolerance;   // the rule it breaks, e.g. "atol 0.0001 + rtol 0.0001 * |model|"
  OutputCheck check;       // how that value compares
  int64_t compared = 0;    // operations compared, up to and including it
  int64_t uncompared = 0;  // operations before it with no TorchScript value to compare
};

struct VerifyReport {
  std::string runtime_library;  // the libneuralnetworks.so that ran
  double atol = 0, rtol = 0;    // the float tolerances used (relaxed_tolerances)
  // float16 computation: the operations that round to float16 and the
  // RMS-relative bound they give (VerifyOptions::float16_roundings); 0: none.
  int64_t float16_roundings = 0;
  double float16_rms_bound = 0;
  bool dynamic_quantization = false;  // the model quantizes dynamically: tolerances widened
  // QNNPACK cannot load the model (quantized 3-D convolutions): eager ran on
  // PyTorch's default quantized engine
  bool eager_default_engine = false;
  std::vector<std::vector<int64_t>> shapes;  // the input shapes used
  // 0, or m: no --verify-shape was given and the model fails at the default
  // sizes, so every flexible size was rounded up to a multiple of m (the
  // first m the model runs at: the sizes the converter's validator checks
  // such a model at, runnable_sizes in core/sample_inputs.h).
  int64_t shapes_multiple = 0;
  std::vector<OutputCheck> outputs;
  // A stateful model (its converted module's state_attributes): the calls
  // run in sequence, each on fresh inputs (kStateCalls; the --verify-input
  // tensors every time), `outputs` holding each call's outputs and state.
  std::vector<std::string> state;
  int64_t calls = 1;
  bool ok = false;
  std::optional<Divergence> divergence;  // when an output differs
};

// Parses a --verify-shape value: sizes >= 1 joined by x (`scalar` for a 0-D
// input). Throws ConvertError(2) naming the text.
std::vector<int64_t> parse_verify_shape(const std::string& text);

// The run-time shape of every input: `shapes` (checked against the specs) or
// the defaults (default_sample_shapes, core/sample_inputs.h). Throws ConvertError(2) when a shape
// does not fit its spec.
std::vector<std::vector<int64_t>> verify_input_shapes(const std::vector<InputSpec>& specs,
                                                      const VerifyOptions& options);

// Seeded random inputs: float32 randn; quint8 a randn tensor quantized with
// the spec's scale and zero point; int32 integers in [0, 8); int16 integers in
// [-64, 64). Inputs that are NHWC (spec or `nhwc_all` for 4-D) are
// channels-last tensors. Seeds the global generator with options.seed.
std::vector<at::Tensor> make_verify_inputs(const std::vector<InputSpec>& specs, bool nhwc_all,
                                           const VerifyOptions& options);

// Finds and loads libneuralnetworks.so (RTLD_NOW | RTLD_GLOBAL) so that
// PyTorch's NNAPI binding, which dlopens it by name, gets this one. Looks at
// `explicit_path` if not empty, else <directory of the executable>/runtime/,
// then $NNAPI_CONVERT_RUNTIME (a file or a directory), then the dynamic
// loader's own search (LD_LIBRARY_PATH, ...). Returns the path loaded; loads
// once per process. Throws ConvertError(1) saying where it looked.
// The tensors of a --verify-input file, checked against the specs (count,
// dtype, the fixed dimensions); NHWC inputs made channels-last. Throws
// ConvertError(2).
std::vector<at::Tensor> load_verify_inputs(const std::string& path,
                                           const std::vector<InputSpec>& specs, bool nhwc_all);

// `purpose` names what needs the runtime, for the message when it is missing.
std::string load_nnapi_runtime(const std::string& explicit_path = "",
                               const std::string& purpose = "--verify");

// The scale of the quantized operand each model output of a converted module
// is dequantized from (0 when the output is not produced by DEQUANTIZE),
// read from the module's ser_model.
std::vector<double> dequantized_output_quanta(const std::vector<int32_t>& ser_model);

// Compares one output (nnapi against the eager reference). `quantum` > 0 for
// a float output dequantized from a quantized operand of that scale.
OutputCheck compare_output(const at::Tensor& nnapi, const at::Tensor& eager, double quantum,
                           const VerifyOptions& options);

// Why comparing an output with `eager` under these rules proves little, or ""
// when it does not: some constant output would pass, because every element
// of `eager` is within the tolerance of one value. That is a constant output
// (a classifier head driven to one class), or one smaller than the tolerance
// (an all-zero output would pass), or one that varies by less than the
// tolerance. Float elements pass within atol + rtol * |eager| (a float from
// DEQUANTIZE, `quantum` > 0, within one quantum too); a quantized output,
// compared as int_repr, passes a constant when its integers span at most 2;
// integer outputs are compared exactly. A one-element output can only be
// too small. compare_output warns with this; the tests fail on it.
std::string constant_output_would_pass(const at::Tensor& eager, double quantum,
                                       const VerifyOptions& options);

// Runs `module_path` (a converted module) on `inputs` on the NNAPI runtime and
// returns its outputs as a flat list. Loads the runtime first; `purpose` names
// what needs it in the message when it cannot be loaded. With `specs`
// (ConvertOptions::args), forward gets each argument as given, the tensors
// of `inputs` in their places.
std::vector<at::Tensor> run_converted(const std::string& module_path,
                                      const std::vector<at::Tensor>& inputs,
                                      const std::string& runtime_library = "",
                                      const std::string& purpose = "--verify",
                                      const std::vector<ArgSpec>& specs = {});

// Tolerances that fit float16, for a model converted with relax_f32_to_f16
// (NNAPI's relaxComputationFloat32toFloat16: a device may compute float32
// operations in float16, and the host runtime rounds every float32 result to
// float16 to show it): 5 units of float16's precision at 1 (5 * 2^-10), as
// Android's generated tests allow relaxed and float16 results.
constexpr double kFloat16Tolerance = 5.0 / 1024.0;
// How many calls --verify runs in sequence for a stateful model.
constexpr int64_t kStateCalls = 3;
// Float tolerances of --verify for a dynamic-quantized model (verify.cpp).
constexpr double kDynamicQuantTolerance = 0.05;

// `verify` with atol and rtol raised to at least kFloat16Tolerance when the
// conversion asks for relaxed or float16 computation (--float16); unchanged
// otherwise. With `ser_model` (the converted model's blob), such a
// conversion also gets float16_roundings = its operation count.
VerifyOptions relaxed_tolerances(const ConvertOptions& options, const VerifyOptions& verify,
                                 const std::vector<int32_t>& ser_model = {});

// Runs the original model (options.model_path; with PyTorch's QNNPACK
// quantized engine, as on Android and in test_nnapi.py) and the converted
// module on the same seeded random inputs and compares every output. Throws
// ConvertError(2) for shapes that do not fit, ConvertError(1) when the runtime
// cannot be found or a model fails to run; a mismatch is reported, not thrown.
// Float outputs are compared with relaxed_tolerances(options, verify).
VerifyReport verify_conversion(const ConvertOptions& options,
                               const std::string& converted_module_path,
                               const VerifyOptions& verify);

// Only after a mismatch (it converts the model again and runs both models
// once more): runs the model's graph with every intermediate value it lowers
// to an NNAPI operand as an extra output, and the converted module on the
// host runtime with its operation observer, and compares the operations'
// results in model order with the same rules as outputs. Never throws: a
// diagnosis that fails says why in Divergence::error.
Divergence locate_divergence(const ConvertOptions& options,
                             const std::string& converted_module_path,
                             const std::vector<at::Tensor>& inputs, const VerifyOptions& verify);

// The paragraph for a mismatch, e.g. "first diverging operation: #17
// AVERAGE_POOL_2D, lowered from aten::avg_pool2d at model.py:12 (`y =
// F.avg_pool2d(x, 2)`); max abs err 0.31 (tolerance: atol 0.0001 + rtol
// 0.0001 * |model|); every earlier operation matches (16 compared)".
std::string format_divergence(const Divergence& divergence);

// One line per output, e.g. "output 0: max abs err 3.8e-06, max rel err
// 1.2e-05, ok".
std::string format_output_check(size_t index, const OutputCheck& check);

}  // namespace nnapi_convert
