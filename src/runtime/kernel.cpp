// The execution context, shared tensor helpers and the registry.
#include "kernel.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace nnrt {

// ---------------------------------------------------------------- execution

namespace {

bool is_half(OperandType t) { return t == OperandType::TensorFloat16 || t == OperandType::Float16; }

OperandType widened(OperandType t) {
  if (t == OperandType::TensorFloat16) return OperandType::TensorFloat32;
  if (t == OperandType::Float16) return OperandType::Float32;
  return t;
}

}  // namespace

ExecContext::ExecContext(const Operation& op, const Model& model, std::vector<Value>& values)
    : op_(op), model_(model), values_(values) {
  for (uint32_t o : op.inputs) widened_ = widened_ || is_half(model.operands()[o].type);
  for (uint32_t o : op.outputs) widened_ = widened_ || is_half(model.operands()[o].type);
  if (!widened_) return;
  wide_in_.resize(op.inputs.size());
  for (uint32_t o : op.outputs) {
    wide_out_.push_back(model.operands()[o]);
    wide_out_.back().type = widened(wide_out_.back().type);
  }
}

bool ExecContext::has(size_t i) const {
  if (i >= op_.inputs.size()) return false;
  return values_[op_.inputs[i]].present;
}

const Value& ExecContext::stored_in(size_t i) const {
  if (!has(i)) fail(Result::BadData, "missing value for input " + std::to_string(i));
  return values_[op_.inputs[i]];
}

const Value& ExecContext::in(size_t i) const {
  const Value& v = stored_in(i);
  if (!widened_ || !is_half(v.type)) return v;
  Value& w = wide_in_[i];
  if (!w.present) {
    w = v;
    w.t = v.t.to(at::kFloat);
    w.type = widened(v.type);
  }
  return w;
}

int32_t ExecContext::i32(size_t i) const {
  const Value& v = in(i);
  if (v.t.numel() != 1) fail(Result::BadData, "expected a scalar at input " + std::to_string(i));
  return v.t.to(at::kInt).item<int32_t>();
}

float ExecContext::f32(size_t i) const {
  const Value& v = in(i);
  if (v.t.numel() != 1) fail(Result::BadData, "expected a scalar at input " + std::to_string(i));
  return v.t.to(at::kFloat).item<float>();
}

bool ExecContext::flag(size_t i) const {
  const Value& v = in(i);
  if (v.t.numel() != 1) fail(Result::BadData, "expected a scalar at input " + std::to_string(i));
  return v.t.to(at::kInt).item<int32_t>() != 0;
}

const nnapi::Form& ExecContext::form() const {
  const nnapi::Signature* s = nnapi::signature_of_code(op_.code);
  const nnapi::Form* f =
      s ? nnapi::form_of(*s, op_.inputs.size(),
                         [&](size_t i) { return model_.operands()[op_.inputs[i]].type; })
        : nullptr;
  if (!f)
    fail(Result::BadData, "operation " + std::to_string(op_.code) + " has no form of " +
                              std::to_string(op_.inputs.size()) + " inputs");
  return *f;
}

std::vector<int64_t> ExecContext::int_list(size_t i) const {
  at::Tensor t = in(i).t.to(at::kLong).contiguous();
  const int64_t* p = t.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + t.numel());
}

const Operand& ExecContext::in_operand(size_t i) const {
  return model_.operands().at(op_.inputs.at(i));
}

const Operand& ExecContext::out_operand(size_t i) const {
  if (widened_) return wide_out_.at(i);
  return model_.operands().at(op_.outputs.at(i));
}

void ExecContext::set_output(size_t i, at::Tensor t) {
  const Operand& decl = out_operand(i);
  // NNAPI has no rank-0 tensors: a reduction over every dim without
  // keep_dims, or a SQUEEZE of every dim, gives shape [1] (NeuralNetworks.h,
  // MEAN, REDUCE_* and SQUEEZE), where LibTorch's kernels give 0-dim.
  if (t.dim() == 0) t = t.reshape({1});
  if (t.scalar_type() != dtype_for(decl.type))
    fail(Result::OpFailed,
         "kernel produced the wrong element type for output " + std::to_string(i));
  if (!decl.dims.empty()) {
    bool ok = static_cast<size_t>(t.dim()) == decl.dims.size();
    for (size_t d = 0; ok && d < decl.dims.size(); ++d)
      ok = decl.dims[d] == 0 || decl.dims[d] == t.size(static_cast<int64_t>(d));
    if (!ok) {
      std::ostringstream os;
      os << "computed shape " << t.sizes() << " does not match declared dims [";
      for (uint32_t d : decl.dims) os << " " << d;
      os << " ] of operand " << op_.outputs[i];
      fail(Result::OpFailed, os.str());
    }
  }
  const Operand& stored = model_.operands().at(op_.outputs.at(i));
  if (stored.type != decl.type) t = t.to(dtype_for(stored.type));  // float32 -> float16
  Value& v = values_[op_.outputs[i]];
  v.t = t.contiguous();
  v.type = stored.type;
  v.scale = decl.scale;
  v.zero_point = decl.zero_point;
  v.present = true;
}

// ---------------------------------------------------------------- helpers

at::ScalarType dtype_for(OperandType type) {
  switch (type) {
    case OperandType::Float32:
    case OperandType::TensorFloat32:
      return at::kFloat;
    case OperandType::Int32:
    case OperandType::UInt32:
    case OperandType::TensorInt32:
      return at::kInt;
    case OperandType::TensorQuant8Asymm:
      return at::kByte;
    case OperandType::TensorQuant8SymmPerChannel:
    case OperandType::TensorQuant8Symm:
      return at::kChar;
    case OperandType::Bool:
    case OperandType::TensorBool8:
      return at::kBool;
    case OperandType::Float16:
    case OperandType::TensorFloat16:
      return at::kHalf;
    case OperandType::TensorQuant16Symm:
    case OperandType::TensorQuant16Asymm:
      return at::kShort;
  }
  fail(Result::BadData, "unknown operand type");
}

bool is_quant8(OperandType type) { return type == OperandType::TensorQuant8Asymm; }

at::Tensor real_values(const Value& v, at::ScalarType dtype) {
  switch (v.type) {
    case OperandType::TensorQuant16Asymm:  // unsigned 16-bit values stored as int16
      return (quant16_asymm_values(v.t).to(dtype) - v.zero_point) * static_cast<double>(v.scale);
    case OperandType::TensorQuant8Asymm:
    case OperandType::TensorQuant16Symm:
    case OperandType::TensorQuant8Symm:
      return (v.t.to(dtype) - v.zero_point) * static_cast<double>(v.scale);
    default:
      return v.t.to(dtype);
  }
}

std::pair<int32_t, int32_t> quant_activation_range(int32_t fuse, float scale, int32_t zero_point) {
  auto q = [&](double real) {
    return static_cast<int32_t>(zero_point + std::round(real / static_cast<double>(scale)));
  };
  int32_t lo = 0, hi = 255;
  switch (static_cast<Fuse>(fuse)) {
    case Fuse::None:
      break;
    case Fuse::Relu:
      lo = std::max(lo, zero_point);
      break;
    case Fuse::Relu1:
      lo = std::max(lo, q(-1.0));
      hi = std::min(hi, q(1.0));
      break;
    case Fuse::Relu6:
      lo = std::max(lo, zero_point);
      hi = std::min(hi, q(6.0));
      break;
  }
  return {lo, hi};
}

void check_fuse_code(int32_t fuse) {
  if (fuse < 0 || fuse > 3) fail(Result::BadData, "bad fused activation " + std::to_string(fuse));
}

at::Tensor quantize_u8(const at::Tensor& real, float scale, int32_t zero_point, int32_t lo,
                       int32_t hi) {
  // std::round semantics: halves away from zero.
  at::Tensor scaled = real.to(at::kDouble) / static_cast<double>(scale);
  at::Tensor rounded = at::sign(scaled) * at::floor(at::abs(scaled) + 0.5);
  return (rounded + zero_point).clamp(lo, hi).to(at::kByte);
}

at::Tensor accumulator_values(const Value& v) {
  const double zero_point = v.type == OperandType::TensorInt32 ? 0 : v.zero_point;
  return v.t.to(at::kDouble) - zero_point;
}

at::Tensor requantize_accumulator(const at::Tensor& acc, float in_scale, float w_scale,
                                  const Operand& out, int32_t fuse) {
  check_fuse_code(fuse);
  const float multiplier = (w_scale * in_scale) * (1.0f / out.scale);
  auto [lo, hi] = quant_activation_range(fuse, out.scale, out.zero_point);
  at::Tensor scaled = acc.to(at::kFloat) * at::scalar_tensor(multiplier, at::kFloat);
  return (at::round(scaled) + out.zero_point).clamp(lo, hi).to(at::kByte);
}

at::Tensor requantize_accumulator(const at::Tensor& acc, float in_scale, const at::Tensor& w_scales,
                                  const Operand& out, int32_t fuse) {
  check_fuse_code(fuse);
  at::Tensor multiplier = (w_scales.to(at::kFloat) * in_scale) * (1.0f / out.scale);
  auto [lo, hi] = quant_activation_range(fuse, out.scale, out.zero_point);
  at::Tensor scaled = acc.to(at::kFloat) * multiplier;
  return (at::round(scaled) + out.zero_point).clamp(lo, hi).to(at::kByte);
}

at::Tensor channel_scales(const Operand& op, int64_t rank, int64_t dim) {
  if (op.channel_scales.empty()) fail(Result::BadData, "per-channel scales were never set");
  std::vector<int64_t> shape(static_cast<size_t>(rank), 1);
  shape[static_cast<size_t>(dim)] = static_cast<int64_t>(op.channel_scales.size());
  return at::tensor(op.channel_scales, at::kFloat).reshape(shape);
}

at::Tensor quantize_like_pytorch(const at::Tensor& real, const Operand& out, int32_t fuse) {
  check_fuse_code(fuse);
  const float inverse_scale = 1.0f / out.scale;
  auto [lo, hi] = quant_activation_range(fuse, out.scale, out.zero_point);
  at::Tensor scaled = real.to(at::kFloat) * at::scalar_tensor(inverse_scale, at::kFloat);
  return (at::round(scaled) + out.zero_point).clamp(lo, hi).to(at::kByte);
}

at::Tensor quant16_asymm_values(const at::Tensor& stored) {
  return stored.to(at::kInt).bitwise_and(0xFFFF);
}

at::Tensor quant16_asymm_storage(const at::Tensor& values) {
  at::Tensor v = values.to(at::kInt).clamp(0, 65535);
  return at::where(v > 32767, v - 65536, v).to(at::kShort);
}

at::Tensor to_operand(const at::Tensor& real, const Operand& out, int32_t fuse) {
  check_fuse_code(fuse);
  if (out.type == OperandType::TensorQuant16Asymm) {
    if (fuse != 0) fail(Result::BadData, "a fused activation on a TENSOR_QUANT16_ASYMM result");
    // Round half away from zero, as quantize_u8, then saturate to [0, 65535].
    at::Tensor scaled = real.to(at::kDouble) / static_cast<double>(out.scale);
    at::Tensor rounded = at::sign(scaled) * at::floor(at::abs(scaled) + 0.5);
    return quant16_asymm_storage((rounded + out.zero_point).clamp(0, 65535));
  }
  if (is_quant8(out.type)) {
    auto [lo, hi] = quant_activation_range(fuse, out.scale, out.zero_point);
    return quantize_u8(real, out.scale, out.zero_point, lo, hi);
  }
  at::Tensor r = real;
  switch (static_cast<Fuse>(fuse)) {
    case Fuse::None:
      break;
    case Fuse::Relu:
      r = at::clamp_min(r, 0);
      break;
    case Fuse::Relu1:
      r = at::clamp(r, -1, 1);
      break;
    case Fuse::Relu6:
      r = at::clamp(r, 0, 6);
      break;
  }
  return r.to(dtype_for(out.type));
}

at::Tensor nhwc_to_nchw(const at::Tensor& t) {
  if (t.dim() != 4) fail(Result::BadData, "expected a 4-D tensor");
  return t.permute({0, 3, 1, 2});
}

at::Tensor nchw_to_nhwc(const at::Tensor& t) { return t.permute({0, 2, 3, 1}).contiguous(); }

int64_t wrap_axis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    fail(Result::BadData,
         "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

// ---------------------------------------------------------------- registry

const std::vector<OpKernel>& all_kernels() {
  static const std::vector<OpKernel> table = [] {
    std::vector<OpKernel> t;
    add_elementwise_kernels(t);
    add_activation_kernels(t);
    add_conv_kernels(t);
    add_pool_kernels(t);
    add_shape_kernels(t);
    add_resize_kernels(t);
    add_quant_kernels(t);
    add_logical_kernels(t);
    add_reduce_kernels(t);
    add_space_batch_kernels(t);
    add_lookup_kernels(t);
    add_normalization_kernels(t);
    add_random_kernels(t);
    add_detection_kernels(t);
    add_recurrent_kernels(t);
    return t;
  }();
  return table;
}

const OpKernel* find_kernel(int32_t code) {
  for (const OpKernel& k : all_kernels())
    if (static_cast<int32_t>(k.code) == code) return &k;
  return nullptr;
}

bool nchw_flag(const ExecContext& ctx) { return ctx.flag_or(ctx.form().at(R::Layout), false); }

Window read_window(const ExecContext& ctx, const nnapi::Form& form) {
  Window w;
  if (form.has(R::PaddingScheme)) {
    w.implicit_scheme = ctx.i32(form.at(R::PaddingScheme));
  } else {
    w.pad_l = ctx.i32(form.at(R::PadLeft));
    w.pad_r = ctx.i32(form.at(R::PadRight));
    w.pad_t = ctx.i32(form.at(R::PadTop));
    w.pad_b = ctx.i32(form.at(R::PadBottom));
  }
  w.stride_w = ctx.i32(form.at(R::StrideW));
  w.stride_h = ctx.i32(form.at(R::StrideH));
  return w;
}

}  // namespace nnrt
