// The short-time Fourier transform: aten::stft (torch.stft, which pads for
// center=True in the graph before it) and its .center overload (Tensor.stft in
// scripted code, which pads itself), as a DFT with a constant basis. The
// window, zero-padded to n_fft in the middle as PyTorch places it, is folded
// into the basis: a frame t of the signal x gives bin f
//
//   X[f, t] = sum_k w[k] x[t * hop + k] exp(-2 pi i f k / n_fft)
//
// (times n_fft^-1/2 when normalized), so real and imaginary parts are one
// CONV_2D of the (N, 1, 1, L) signal with 2F kernels of width n_fft and stride
// hop (rows cos(2 pi f k / n) w[k] and -sin(2 pi f k / n) w[k], made in
// float64). Its (N, 2F, 1, T) result is viewed (N, 2, F, T) and transposed to
// PyTorch's (N, F, T, 2): return_complex=False's real pairs. A complex result
// (return_complex=True) is held as the same pairs; the converted model can
// read it only through abs() (the magnitude: SQRT of the REDUCE_SUM of the
// squares over the pairs) or view_as_real(): any other use, or returning it,
// is refused before lowering (NNAPI has no complex tensors).
#include <ATen/ATen.h>
#include <torch/csrc/jit/ir/constants.h>

#include <cmath>
#include <string>

#include "lower/convolution.h"
#include "lower/emit.h"
#include "lower/forms.h"
#include "lower/node_args.h"
#include "lower/padding.h"
#include "lower/signature_inputs.h"

namespace nnapi_convert {
namespace {

using nnapi::Op;
using nnapi::OperandType;

bool returns_complex(const Node* node) {
  const c10::FunctionSchema* schema = node->maybeSchema();
  if (!schema) return false;
  const auto at = schema->argumentIndexWithName("return_complex");
  if (!at) return false;
  const auto v = torch::jit::toIValue(node->input(*at));
  return v && v->isBool() && v->toBool();
}

// Refuses, before lowering, a complex result read otherwise than by abs() or
// view_as_real(), or returned.
std::string stft_support(const Node* node) {
  if (!returns_complex(node)) return "";
  for (const torch::jit::Use& use : node->output()->uses()) {
    const c10::Symbol kind = use.user->kind();
    if (kind == c10::aten::abs || kind == c10::aten::view_as_real) continue;
    return "its complex result is " +
           (kind == c10::prim::Return ? std::string("returned")
                                      : "read by " + std::string(kind.toQualString())) +
           "; NNAPI has no complex tensors: take .abs() or torch.view_as_real() of it in the "
           "model, or give return_complex=False";
  }
  return "";
}

// The basis as an OIHW convolution weight (2F, 1, 1, n_fft): rows f (real)
// and F + f (imaginary) for the F bins.
at::Tensor dft_basis(int64_t n_fft, int64_t bins, const at::Tensor& window, bool normalized) {
  const int64_t win_length = window.size(0);
  at::Tensor w = at::zeros({n_fft}, at::kDouble);
  const int64_t left = (n_fft - win_length) / 2;
  w.narrow(0, left, win_length).copy_(window.to(at::kDouble));
  const at::Tensor k = at::arange(n_fft, at::kDouble);
  const at::Tensor f = at::arange(bins, at::kDouble);
  const at::Tensor angle = at::outer(f, k) * (2.0 * M_PI / static_cast<double>(n_fft));
  at::Tensor basis = at::cat({at::cos(angle) * w, -at::sin(angle) * w}, 0);
  if (normalized) basis = basis / std::sqrt(static_cast<double>(n_fft));
  return basis.to(at::kFloat).reshape({2 * bins, 1, 1, n_fft}).contiguous();
}

void lower_stft(LoweringContext& cx, const Node* node) {
  NodeArgs args(cx, node);
  OperandHandle x = args.tensor("self");
  const auto rank = static_cast<int64_t>(x.op.shape.size());
  check(x.op.type == OperandType::TensorFloat32 && (rank == 1 || rank == 2), [&] {
    return "aten::stft of a " + std::string(nnapi::operand_type_name(x.op.type)) + " tensor " +
           shape_str(x.op.shape) + ": only float32 signals of shape (L) or (N, L) convert";
  });
  const int64_t n_fft = args.integer("n_fft");
  const int64_t hop = args.is_none("hop_length") ? n_fft / 4 : args.integer("hop_length");
  const int64_t win_length = args.is_none("win_length") ? n_fft : args.integer("win_length");
  check(n_fft > 0 && hop > 0 && win_length > 0 && win_length <= n_fft, [&] {
    return "aten::stft with n_fft " + std::to_string(n_fft) + ", hop_length " +
           std::to_string(hop) + " and win_length " + std::to_string(win_length) +
           ": PyTorch needs them positive and win_length <= n_fft";
  });
  at::Tensor window = at::ones({win_length}, at::kDouble);
  if (!args.is_none("window")) {
    check(cx.has_constant(args.value("window")),
          "the window of aten::stft is computed from the model's inputs; nnapi-convert folds "
          "it into a constant DFT basis, so it must be a constant (a buffer, or "
          "torch.hann_window(n) in forward)");
    window = cx.constant_tensor(args.value("window"));
    check(window.dim() == 1 && window.size(0) == win_length && !window.is_complex(), [&] {
      return "the window of aten::stft has shape " + shape_str(window.sizes().vec()) + ", not (" +
             std::to_string(win_length) + ") (win_length)";
    });
  }
  const bool onesided = args.is_none("onesided") || args.flag("onesided");
  const int64_t bins = onesided ? n_fft / 2 + 1 : n_fft;
  if (args.has("center") && args.flag("center")) {
    // What torch.stft does in Python before aten::stft: pad n_fft / 2 on both
    // sides of the signal.
    std::vector<int64_t> before(rank, 0), after(rank, 0);
    before.back() = after.back() = n_fft / 2;
    x = emit_mode_pad(cx, x, before, after, args.constant("pad_mode").toStringRef(), 0.0);
  }
  const int64_t length = x.op.shape.back();
  check(length != 0,
        "aten::stft of a signal of flexible length: the number of frames must be known during "
        "conversion; give the length a fixed size in --input (a batch may be flexible)");
  check(length >= n_fft, [&] {
    return "aten::stft of a signal of " + std::to_string(length) +
           " samples (after any centering padding), fewer than n_fft " + std::to_string(n_fft);
  });
  const int64_t frames = 1 + (length - n_fft) / hop;
  const SymInt batch = rank == 2 ? sym_shape(x)[0] : SymInt{1, ""};
  const OperandHandle image = emit_reshape(cx, x, {batch, {1, ""}, {1, ""}, {length, ""}});
  const at::Tensor basis = dft_basis(n_fft, bins, window, args.flag("normalized"));
  const int32_t bias_id = cx.add_weight(at::zeros({2 * bins}, at::kFloat));
  const ConvPoolArgs conv = make_conv_pool_args({1, n_fft}, {1, hop}, {0, 0}, {1, 1}, 1);
  const OperandHandle y =
      emit_conv2d(cx, nullptr, 0.0, 0, image, basis, bias_id, conv, false, nnapi::Fuse::None);
  const OperandHandle parts = emit_reshape(cx, y, {batch, {2, ""}, {bins, ""}, {frames, ""}});
  const OperandHandle pairs = emit_permute(cx, parts, {0, 2, 3, 1});
  if (rank == 2) {
    cx.reinterpret(node->output(), pairs.id, pairs.op);
  } else {
    emit_reshape(cx, pairs, {{bins, ""}, {frames, ""}, {2, ""}}, node->output());
  }
  if (returns_complex(node)) cx.set_torch_dtype(node->output(), at::kComplexFloat);
}

bool is_complex(const LoweringContext& cx, const Value* v) {
  return cx.torch_dtype_of(v) == at::kComplexFloat;
}

}  // namespace

// abs() of a complex result: sqrt(re^2 + im^2), the pairs in the last dim
// (aten::abs's spec, pointwise.cpp).
void lower_complex_abs(LoweringContext& cx, const Node* node) {
  const OperandHandle z = cx.get_operand(node->input(0));
  const OperandHandle squares = emit_binary(cx, Op::Mul, z, z);
  std::vector<SymInt> dims = sym_shape(squares);
  dims.pop_back();
  const OperandHandle sum = cx.add_output(nullptr, squares.op, dims);
  ModelBuilder& m = cx.model();
  const int32_t axes_id = m.add_int_vector({static_cast<int64_t>(squares.op.shape.size()) - 1});
  add_reduce(m, Op::ReduceSum, squares.id, axes_id, m.add_bool_scalar(false), sum.id);
  emit_unary(cx, Op::Sqrt, sum, node->output());
}

namespace {

// view_as_real() of a complex result: its pairs, now a float32 tensor.
void lower_view_as_real(LoweringContext& cx, const Node* node) {
  check(is_complex(cx, node->input(0)),
        "view_as_real of a tensor that is not a complex aten::stft result: nnapi-convert "
        "holds no other complex tensors");
  cx.alias(node->output(), node->input(0));
  cx.set_torch_dtype(node->output(), at::kFloat);
}

}  // namespace

void register_spectral_ops(LoweringTable& t) {
  t.add("aten::stft", lower_stft)
      .with_support(stft_support)
      .with_note(
          "float32 signals (L) or (N, L) of fixed length (a flexible batch): a DFT with a "
          "constant basis, the window folded in, as one strided CONV_2D, then TRANSPOSE to the "
          "(..., F, T, 2) real pairs of return_complex=False; center=True pads with aten::pad's "
          "modes. A complex result (return_complex=True) converts only through abs() (the "
          "magnitude) or view_as_real()");
  t.add("aten::view_as_real", lower_view_as_real)
      .with_note("of a complex aten::stft result only (its real pairs)");
}

}  // namespace nnapi_convert
