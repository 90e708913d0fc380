// Post-training quantization (`--quantize uint8`, issue 22).
//
// Design. The converter already lowers quantized TorchScript graphs
// (quantize_per_tensor, quantized::conv2d / conv2d_relu / linear / add /
// add_relu / mul, dequantize, and the aten ops that take quantized tensors:
// relu, hardtanh, max_pool2d, adaptive_avg_pool2d, flatten, ...). So
// --quantize does not quantize inside the lowering: it rewrites the frozen
// float graph into such a quantized graph and hands that to the unchanged
// lowering, validator and serializer.
//
//  1. Plan (plan_quantization): walk the frozen graph's top-level nodes and
//     decide, per node, whether it is computed quantized: convolutions
//     (aten::conv2d, aten::_convolution, not transposed) and aten::linear
//     with constant weights, tensor-tensor aten::add / aten::mul, each with
//     an output of its own; a ReLU / ReLU6 that is the only use of one of
//     them is absorbed (conv2d_relu, add_relu; or the clamp is done by the
//     output's range [0, max], so the ReLU6 after it is exact); relu,
//     hardtanh, max_pool2d, adaptive_avg_pool2d, avg_pool2d, flatten,
//     reshape, view, dropout take a quantized input as it is and keep its
//     scale (as PyTorch's quantized kernels do); sigmoid, tanh, hardsigmoid
//     and softmax of a quantized input are computed quantized at the output
//     quantization NNAPI prescribes for LOGISTIC, TANH and SOFTMAX (1/256
//     and 0; 1/128 and 128; hardsigmoid as PyTorch's, 1/256 and 0), which
//     PyTorch's quantized kernels also give, hardswish at its calibrated
//     range (quantized::hardswish). SiLU stays float, as FX's PTQ keeps it:
//     computed quantized as x * sigmoid(x) (two roundings) it cost
//     EfficientNet-B0 3.5 dB of SQNR (docs/quantization.md). Everything else stays float
//     (a DEQUANTIZE before it, a QUANTIZE after it where a quantized node
//     reads its result), as do nodes --quantize-skip names. Model inputs and
//     outputs stay float, unless --quantized-io: then each float input is
//     quint8 at its calibrated range (read as it is by quantized nodes,
//     dequantized for float ones) and each output quint8 (a quantized
//     node's own, or a float one quantized at its range).
//  2. Calibrate: run the float graph on the samples with every value that
//     needs a scale as an extra output; observe its range: minmax, or a
//     histogram of 2048 bins searched (exhaustively) for the range [a, b]
//     that minimizes the expected squared quantization error (clipping
//     outside, step^2/12 inside), the objective of PyTorch's
//     HistogramObserver. Activations are quint8
//     per tensor with the range widened to hold 0; weights qint8 symmetric
//     per tensor (PyTorch's loader carries one scale per operand), packed
//     with quantized::conv2d_prepack / linear_prepack; biases int32 at
//     input scale x weight scale (done by the lowering).
//  3. Rewrite the graph (build_graph, Mode::Quantized) and lower it.
//  4. Prove (prove_quantization, after the module is written): run the
//     NNAPI module on the host runtime and (a) the float graph with
//     aten::fake_quantize_per_tensor_affine at every quantized value (and
//     fake-quantized weights and biases, Mode::FakeQuant): every output
//     within one quantum of its scale; (b) the float graph: per output SQNR,
//     max abs error, top-1 agreement for classifier outputs, on the
//     --calibration-holdout samples (the calibration samples when none are
//     held out), and a per-layer table (the fake-quantized graph's value
//     against the float one) worst first.
#pragma once

#include <torch/csrc/jit/api/module.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nnapi_convert/conversion.h"

namespace nnapi_convert {

// One sample: a tensor per model input.
using Sample = std::vector<at::Tensor>;

// The samples of --calibration / --calibration-dir, checked against the
// input specs (count, dtype float32, fixed dims, finite values). Throws
// ConvertError(1) naming the file and what to do.
std::vector<Sample> load_calibration_samples(const QuantizeOptions& q,
                                             const std::vector<InputSpec>& specs);

// Images calibrate a one-input model whose input is 4-D float32 N x C x H x W
// with C 1 or 3 and H, W fixed; --mean and --std give C values. Throws
// ConvertError (1, or 2 for --mean/--std) naming `source` otherwise.
void check_image_calibration(const std::string& source, const QuantizeOptions& q,
                             const std::vector<InputSpec>& specs);

// PNG/JPEG `files` (checked by check_image_calibration) as samples: each
// image decoded (stb_image), made C channels (gray repeated, alpha dropped,
// color to gray as PIL's convert("L")), resized to cover H x W keeping its
// aspect ratio (antialiased bilinear, as torchvision's Resize on a tensor)
// and center cropped to H x W (torchvision's CenterCrop), divided by 255,
// then (x - mean) / std per channel; N images make one sample. Throws
// ConvertError(1) naming the image that cannot be read or decoded.
std::vector<Sample> read_calibration_images(const std::vector<std::string>& files,
                                            const QuantizeOptions& q,
                                            const std::vector<InputSpec>& specs);

// quint8 (per tensor) parameters for the range [lo, hi] (widened to hold 0).
struct QParams {
  double scale = 1;
  int64_t zero_point = 0;
};
QParams qparams_for_range(double lo, double hi);

// The range the histogram observer picks for `counts` over [lo, hi]
// (equal bins): the one minimizing the expected squared error of uint8
// quantization.
std::pair<double, double> histogram_range(const std::vector<double>& counts, double lo, double hi);

// What --quantize decided and measured; shared with the proof.
struct QuantizedModel;

// The options the quantized graph is lowered and written with: `options`
// with, under --quantized-io, each input spec quint8 at its calibrated
// scale and zero point.
ConvertOptions lowering_options(const QuantizedModel& q, const ConvertOptions& options);

// Rewrites `module`'s forward graph (frozen, float) into a quantized graph,
// calibrated on the samples. Throws ConvertError.
std::shared_ptr<const QuantizedModel> quantize_module(torch::jit::Module& module,
                                                      const ConvertOptions& options);

// The proof, as the --report object "quantization" (see README/report):
// fake_quant {ok, outputs[{max_quanta, quantum, max_abs_err, ...}]},
// quality {samples, holdout, outputs[{sqnr_db, max_abs_err, top1_agreement}]},
// layers[{value, node, sqnr_db}] worst first, min_sqnr, ok.
nlohmann::ordered_json prove_quantization(const QuantizedModel& q, const ConvertOptions& options,
                                          const std::string& converted_module_path);

// The lines printed for a proof (one paragraph; `layers` rows of the table).
std::string format_quantization(const nlohmann::ordered_json& proof, size_t layers);

}  // namespace nnapi_convert
