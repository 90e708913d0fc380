#include "lower/emit.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "lower/logical.h"
#include "lower/moves.h"
#include "lower/signature_inputs.h"

namespace nnapi_convert {

using nnapi::Fuse;
using nnapi::Op;
using nnapi::OperandType;

c10::ScalarType torch_dtype(OperandType type) {
  switch (type) {
    case OperandType::TensorFloat32:
      return at::kFloat;
    case OperandType::TensorInt32:
      return at::kInt;
    case OperandType::TensorQuant8Asymm:
      return at::kQUInt8;
    default:
      return at::ScalarType::Undefined;
  }
}

void check_dtype(c10::ScalarType wanted, const OperandHandle& x, const char* what) {
  const c10::ScalarType computed = torch_dtype(x.op.type);
  check(wanted == computed, [&] {
    return std::string(what) + " with dtype=" + c10::toString(wanted) + " of a " +
           c10::toString(computed) +
           " tensor: NNAPI computes it in the input's dtype, so the converted module would "
           "return " +
           c10::toString(computed) + " where the model returns " + c10::toString(wanted) +
           "; drop the dtype change (the dtype argument or cast), or convert the result outside "
           "the NNAPI model";
  });
}

void check_dtype_argument(LoweringContext& cx, const Value* dtype, const OperandHandle& x,
                          const char* what) {
  if (cx.constant_is_none(dtype)) return;
  check_dtype(static_cast<c10::ScalarType>(cx.constant_int(dtype)), x, what);
}

int32_t make_output(LoweringContext& cx, const Value* out, const Operand& o,
                    const OperandHandle* like) {
  return cx.add_output(out, o, dims_like(o.shape, like)).id;
}

OperandHandle float_scalar_tensor(LoweringContext& cx, float v) {
  int32_t id = cx.add_weight(at::full({1}, v, at::kFloat));
  return {id, cx.operand(id)};
}

OperandHandle float_weight_like(LoweringContext& cx, const at::Tensor& t, const Operand& like) {
  at::Tensor f = t.to(at::kFloat).contiguous();
  DimOrder order =
      like.dim_order == DimOrder::ChannelsLast ? DimOrder::ChannelsLast : DimOrder::Contiguous;
  int32_t id = cx.add_weight(f, order);
  return {id, cx.operand(id)};
}

OperandHandle emit_relayout(LoweringContext& cx, const OperandHandle& x, DimOrder to) {
  if (x.op.dim_order == to) return x;
  check(x.op.shape.size() == 4,
        [&] { return "a layout change needs a 4-D tensor, got " + shape_str(x.op.shape); });
  check(to == DimOrder::ChannelsLast || to == DimOrder::Contiguous, "bad target layout");
  Operand out = x.op;
  out.dim_order = to;
  // The immediate first, then the output: the reference's operand order.
  int32_t perm =
      cx.model().add_int_vector(perm_vector(to == DimOrder::ChannelsLast ? kToNhwc : kToNchw));
  int32_t id = make_output(cx, nullptr, out, &x);
  add_transpose(cx.model(), x.id, perm, id);
  return {id, out};
}

namespace {

// Whether `v` holds bools (an int32 0/1 operand): so typed or recorded
// (LoweringContext::torch_dtype_of), or the result of a node that only moves
// elements (lower/moves.h) from bools alone. The values a node moves from are
// lowered before it, each with its recorded dtype, so one step suffices.
bool is_bool_valued(const LoweringContext& cx, const Value* v) {
  return v != nullptr && (is_bool_value(cx, v) || moves_bools(cx, v->node()));
}

}  // namespace

OperandHandle move_int32(
    LoweringContext& cx, std::initializer_list<nnapi::Op> ops,
    const std::vector<OperandHandle>& ins, const Value* out,
    const std::function<OperandHandle(const std::vector<OperandHandle>&, const Value*)>& move) {
  const auto refusing = std::find_if(
      ops.begin(), ops.end(), [&](Op op) { return !cx.takes(op, OperandType::TensorInt32); });
  if (ins[0].op.type != OperandType::TensorInt32 || refusing == ops.end()) return move(ins, out);
  const std::string what = nnapi::op_name(*refusing);
  check(out != nullptr && is_bool_valued(cx, out), [&] {
    return what + " of an int32 tensor: NeuralNetworks.h's " + what +
           " takes no TENSOR_INT32 at the target feature level. nnapi-convert moves bool tensors "
           "through float32 (0 and 1 are exact), but int32 numbers above 2^24 would not survive "
           "it; convert the integers to float in the model, or keep this part in TorchScript "
           "with --cpu-fallback";
  });
  std::vector<OperandHandle> floats;
  for (const OperandHandle& x : ins) {
    Operand f = x.op;
    f.type = OperandType::TensorFloat32;
    floats.push_back(emit_unary_to(cx, Op::Cast, x, f));
  }
  const OperandHandle y = move(floats, nullptr);
  Operand back = y.op;
  back.type = OperandType::TensorInt32;
  return emit_unary_to(cx, Op::Cast, y, back, out);
}

std::string int32_refusal(const std::string& what, const std::string& why) {
  return what + " of an int32 tensor is not supported: " + why +
         ", and int32 numbers above 2^24 would not survive float32; convert the tensor with "
         ".float() first, or keep this node in TorchScript with --cpu-fallback";
}

namespace {

// RESHAPE of `x` to `dims`, whatever its type (emit_reshape).
OperandHandle reshape_op(LoweringContext& cx, const OperandHandle& x,
                         const std::vector<SymInt>& dims, const Value* out) {
  std::vector<int64_t> values;
  std::vector<std::pair<size_t, std::string>> patches;
  bool inferred = false;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i].is_constant()) {
      check(dims[i].value > 0, [&] {
        return "can't reshape " + shape_str(x.op.shape) + " to a size with " + dims[i].str() +
               " elements";
      });
      values.push_back(dims[i].value);
    } else if (!inferred) {
      values.push_back(-1);
      inferred = true;
    } else {
      values.push_back(0);
      patches.emplace_back(i, dims[i].expr);
    }
  }
  if (values.empty()) values.push_back(1);  // a 0-dim result is NNAPI shape [1] (fix_shape)
  ModelBuilder& m = cx.model();
  const int32_t shape_id =
      patches.empty() ? m.add_int_vector(values) : m.add_patched_int_vector(values, patches);
  const OperandHandle y = cx.add_output(out, x.op, dims);
  add_reshape(m, x.id, shape_id, y.id);
  return y;
}

}  // namespace

OperandHandle emit_reshape(LoweringContext& cx, const OperandHandle& x,
                           const std::vector<SymInt>& dims, const Value* out) {
  check(x.op.dim_order == DimOrder::Contiguous, "internal: reshape of a channels-last tensor");
  const auto reshape = [&](const std::vector<OperandHandle>& in, const Value* o) {
    return reshape_op(cx, in[0], dims, o);
  };
  // A bool's 0/1 values move as float32 where RESHAPE takes no TENSOR_INT32
  // (below level 6); other int32 data is left to the driver's feature-level
  // refusal, which names the node.
  if (x.op.type == OperandType::TensorInt32 && is_bool_valued(cx, out))
    return move_int32(cx, {Op::Reshape}, {x}, out, reshape);
  return reshape_op(cx, x, dims, out);
}

OperandHandle emit_tile(LoweringContext& cx, const OperandHandle& x,
                        const std::vector<int64_t>& multiples, const Value* out) {
  const size_t rank = x.op.shape.size();
  check(multiples.size() == rank, "internal: TILE needs one multiple per dim");
  std::vector<SymInt> dims;
  for (size_t d = 0; d < rank; ++d) {
    check(multiples[d] > 0, "internal: TILE multiples must be positive");
    dims.push_back(tiled_dim(sym_dim(x.id, x.op.shape, static_cast<int64_t>(d)), multiples[d]));
  }
  // NNAPI axis a holds PyTorch dim torch_dim(a).
  std::vector<int64_t> nnapi_multiples;
  for (size_t a = 0; a < rank; ++a) {
    nnapi_multiples.push_back(multiples[torch_dim(x.op.dim_order, static_cast<int64_t>(a))]);
  }
  ModelBuilder& m = cx.model();
  const int32_t multiples_id = m.add_int_vector(nnapi_multiples);
  const OperandHandle y = cx.add_output(out, x.op, dims);
  add_tile(m, x.id, multiples_id, y.id);
  return y;
}

// NeuralNetworks.h's STRIDED_SLICE takes no TENSOR_INT32 (the type int32 and
// bool tensors have here) at any level; SLICE and GATHER do from level 3. A
// strided slice of such an x (arguments as strided_slice_roles', per NNAPI
// axis) becomes SLICE when every stride is 1, or GATHER of the indices taken
// along the one axis it cuts otherwise; into `out_id`.
void emit_int32_slice(LoweringContext& cx, const OperandHandle& x,
                      const std::vector<int64_t>& begins, const std::vector<int64_t>& ends,
                      const std::vector<int64_t>& strides, int32_t end_mask, int32_t out_id) {
  const Shape dims = fix_shape(x.op.shape, x.op.dim_order);  // per NNAPI axis, 0 = flexible
  const auto rank = static_cast<int64_t>(dims.size());
  const std::string why = "slicing an int32 or bool tensor of shape " + shape_str(x.op.shape);
  std::vector<int64_t> starts(rank), sizes(rank);
  int64_t cut = -1;  // the one axis a stride other than 1 cuts
  for (int64_t a = 0; a < rank; ++a) {
    const bool whole_end = (end_mask >> a) & 1;
    const int64_t n = dims[a];
    int64_t b = begins[a], e = ends[a];
    if (strides[a] != 1) {
      check(cut < 0 && n != 0, why + " with a step needs a fixed size along the dim it steps");
      cut = a;
      continue;
    }
    if (b < 0 || (!whole_end && e <= 0)) {
      check(n != 0, why + " from the end needs a fixed size along that dim");
    }
    if (b < 0) b += n;
    starts[a] = b;
    if (whole_end) {
      sizes[a] = -1;  // SLICE: all that remain
    } else {
      if (e <= 0) e += n;
      sizes[a] = e - b;
    }
  }
  ModelBuilder& m = cx.model();
  if (cut < 0) {
    const int32_t begin_id = m.add_int_vector(starts);
    const int32_t size_id = m.add_int_vector(sizes);
    add_slice(m, x.id, begin_id, size_id, out_id);
    return;
  }
  for (int64_t a = 0; a < rank; ++a) {
    check(a == cut || (starts[a] == 0 && (sizes[a] == -1 || sizes[a] == dims[a])),
          why +
              " with a step and a cut along another dim too is not supported; slice one dim at "
              "a time");
  }
  const int64_t n = dims[cut], step = strides[cut];
  int64_t b = begins[cut] < 0 ? begins[cut] + n : begins[cut];
  int64_t e =
      ((end_mask >> cut) & 1) ? (step > 0 ? n : -1) : (ends[cut] < 0 ? ends[cut] + n : ends[cut]);
  std::vector<int64_t> taken;
  for (int64_t i = b; step > 0 ? i < std::min(e, n) : i > e; i += step) {
    if (i >= 0 && i < n) taken.push_back(i);
  }
  const int32_t axis_id = m.add_int_scalar(static_cast<int32_t>(cut));
  add_gather(m, x.id, axis_id, m.add_int_vector(taken), out_id);
}

OperandHandle emit_crop(LoweringContext& cx, const OperandHandle& x,
                        const std::vector<int64_t>& before, const std::vector<int64_t>& after,
                        const Value* out) {
  const auto rank = static_cast<int64_t>(x.op.shape.size());
  std::vector<SymInt> dims;
  std::vector<int64_t> begins(rank, 0), ends(rank, 0), strides(rank, 1);
  int32_t end_mask = 0;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t n = x.op.shape[d], cut = before[d] + after[d];
    check(before[d] >= 0 && after[d] >= 0 && (n == 0 || cut < n), [&] {
      return "cropping " + std::to_string(cut) + " elements off dimension " + std::to_string(d) +
             " of " + shape_str(x.op.shape) + " leaves nothing";
    });
    dims.push_back(padded_dim(sym_dim(x.id, x.op.shape, d), -cut));
    // NNAPI axis a holds PyTorch dim d; a negative end counts from the end.
    const int64_t a = nnapi_axis(x.op, d);
    begins[a] = before[d];
    ends[a] = -after[d];
    if (after[d] == 0) end_mask |= 1 << a;
  }
  if (x.op.type == OperandType::TensorInt32) {
    const OperandHandle y = cx.add_output(out, x.op, dims);
    emit_int32_slice(cx, x, begins, ends, strides, end_mask, y.id);
    return y;
  }
  const RoleIds inputs = strided_slice_roles(cx, x.id, begins, ends, strides, end_mask, 0);
  const OperandHandle y = cx.add_output(out, x.op, dims);
  add_by_roles(cx.model(), Op::StridedSlice, inputs, {y.id});
  return y;
}

OperandHandle emit_pad(LoweringContext& cx, const OperandHandle& x_in,
                       const std::vector<int64_t>& before_in, const std::vector<int64_t>& after_in,
                       double value, const Value* out) {
  const auto rank = static_cast<int64_t>(x_in.op.shape.size());
  // Negative amounts crop (PyTorch's constant padding by -k removes k
  // elements): a STRIDED_SLICE first, then PAD by the positive amounts.
  std::vector<int64_t> before = before_in, after = after_in, crop_before(rank, 0),
                       crop_after(rank, 0);
  bool crops = false, pads = false;
  for (int64_t d = 0; d < rank; ++d) {
    crop_before[d] = std::max<int64_t>(0, -before[d]);
    crop_after[d] = std::max<int64_t>(0, -after[d]);
    before[d] = std::max<int64_t>(0, before[d]);
    after[d] = std::max<int64_t>(0, after[d]);
    crops = crops || crop_before[d] || crop_after[d];
    pads = pads || before[d] || after[d];
  }
  const OperandHandle x =
      crops ? emit_crop(cx, x_in, crop_before, crop_after, pads ? nullptr : out) : x_in;
  if (crops && !pads) return x;
  std::vector<SymInt> dims;
  for (int64_t d = 0; d < rank; ++d) {
    dims.push_back(padded_dim(sym_dim(x.id, x.op.shape, d), before[d] + after[d]));
  }
  // Rows [before, after] in the NNAPI operand's dim order.
  std::vector<int64_t> rows;
  for (int64_t nd = 0; nd < rank; ++nd) {
    const int64_t d = torch_dim(x.op.dim_order, nd);
    rows.push_back(before[d]);
    rows.push_back(after[d]);
  }
  return emit_pad_operation(cx, x, cx.model().add_int_tensor(rows, {rank, 2}), dims, value, out);
}

OperandHandle emit_pad_operation(LoweringContext& cx, const OperandHandle& x, int32_t paddings,
                                 const std::vector<SymInt>& dims, double value, const Value* out) {
  ModelBuilder& m = cx.model();
  RoleIds inputs = {{nnapi::Role::Input, x.id}, {nnapi::Role::Paddings, paddings}};
  Op op = Op::Pad;
  if (value != 0.0) {
    op = Op::PadV2;
    if (x.op.type == OperandType::TensorQuant8Asymm) {
      const double q = std::nearbyint(value / x.op.scale) + static_cast<double>(x.op.zero_point);
      inputs.push_back({nnapi::Role::PadValue,
                        m.add_int_scalar(static_cast<int32_t>(std::clamp(q, 0.0, 255.0)))});
    } else {
      inputs.push_back({nnapi::Role::PadValue, m.add_float_scalar(static_cast<float>(value))});
    }
  }
  const OperandHandle y = cx.add_output(out, x.op, dims);
  add_by_roles(m, op, inputs, {y.id});
  return y;
}

std::vector<int64_t> split_sizes(int64_t n, int64_t split_size) {
  check(split_size > 0, "split size must be positive");
  std::vector<int64_t> sizes;
  for (int64_t at = 0; at < n; at += split_size) sizes.push_back(std::min(split_size, n - at));
  return sizes;
}

std::vector<int32_t> emit_split(LoweringContext& cx, const OperandHandle& in, int64_t dim,
                                const std::vector<int64_t>& sizes) {
  const auto rank = static_cast<int64_t>(in.op.shape.size());
  const int64_t axis = nnapi_axis(in.op, dim);
  ModelBuilder& m = cx.model();
  std::vector<int32_t> outputs;
  auto add_part = [&](int64_t size) {
    Shape shape = in.op.shape;
    shape[dim] = size;
    outputs.push_back(make_output(cx, nullptr, in.op.with_shape(shape), &in));
  };
  if (std::all_of(sizes.begin(), sizes.end(), [&](int64_t n) { return n == sizes[0]; })) {
    for (int64_t size : sizes) add_part(size);
    const int32_t axis_id = m.add_int_scalar(static_cast<int32_t>(axis));
    const int32_t count_id = m.add_int_scalar(static_cast<int32_t>(sizes.size()));
    add_split(m, in.id, axis_id, count_id, outputs);
  } else {
    int64_t offset = 0;
    for (int64_t size : sizes) {
      // begin and size in NNAPI dim order; -1 takes a whole (maybe flexible) dim.
      std::vector<int64_t> begin(rank, 0), extent(rank, -1);
      begin[axis] = offset;
      extent[axis] = size;
      add_part(size);
      const int32_t begin_id = m.add_int_vector(begin);
      const int32_t size_id = m.add_int_vector(extent);
      add_slice(m, in.id, begin_id, size_id, outputs.back());
      offset += size;
    }
  }
  return outputs;
}

namespace {

// CONCATENATION of `parts` along PyTorch dim d, whatever their type.
OperandHandle concat_op(LoweringContext& cx, const std::vector<OperandHandle>& parts, int64_t d,
                        const Value* out) {
  std::vector<SymInt> dims = sym_shape(parts[0]);
  std::vector<SymInt> along;
  for (const OperandHandle& p : parts) along.push_back(sym_dim(p.id, p.op.shape, d));
  dims[d] = concat_dim(along);
  std::vector<int32_t> ids;
  for (const OperandHandle& p : parts) ids.push_back(p.id);
  const int32_t axis_id =
      cx.model().add_int_scalar(static_cast<int32_t>(nnapi_axis(parts[0].op, d)));
  const OperandHandle r = cx.add_output(out, parts[0].op, dims);
  add_concatenation(cx.model(), ids, axis_id, r.id);
  return r;
}

}  // namespace

// CONCATENATION of `parts` along PyTorch dim d (bools as float32 between CASTs).
OperandHandle emit_concat(LoweringContext& cx, const std::vector<OperandHandle>& parts, int64_t d,
                          const Value* out) {
  return move_int32(cx, {Op::Concatenation}, parts, out,
                    [&](const std::vector<OperandHandle>& in, const Value* o) {
                      return concat_op(cx, in, d, o);
                    });
}

Shape broadcast_shape(const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da == 1) {
      out[i] = db;
    } else if (db == 1 || da == db) {
      out[i] = da;
    } else if (da == 0 || db == 0) {
      out[i] = 0;
    } else {
      fail("cannot broadcast shapes " + shape_str(a) + " and " + shape_str(b));
    }
  }
  return out;
}

OperandHandle emit_binary(LoweringContext& cx, Op op, const OperandHandle& a,
                          const OperandHandle& b, Fuse fuse, const Value* out,
                          std::optional<QuantParams> out_quant) {
  const OperandHandle& big = b.op.shape.size() > a.op.shape.size() ? b : a;
  Operand o = big.op.with_shape(broadcast_shape(a.op.shape, b.op.shape));
  if (nnapi::is_comparison(op)) {  // EQUAL ... LESS_EQUAL: a TENSOR_BOOL8 result
    o.type = OperandType::TensorBool8;
    o.scale = 0.0;
    o.zero_point = 0;
  }
  if (out_quant) {
    o.scale = out_quant->scale;
    o.zero_point = out_quant->zero_point;
  }
  const int32_t id = cx.add_output(out, o, broadcast_dims(o.shape, {&a, &b})).id;
  RoleIds inputs = {{nnapi::Role::Input, a.id}, {nnapi::Role::SecondInput, b.id}};
  // ADD, SUB, MUL and DIV take a fused activation; MAXIMUM, MINIMUM and the rest don't.
  if (const nnapi::Signature* s = nnapi::signature(op); s && s->forms[0].has(nnapi::Role::Fuse)) {
    // NeuralNetworks.h: TENSOR_INT32 arithmetic (from feature level 4, which
    // ModelBuilder's level check reports below it) has no fused activation.
    check(a.op.type != OperandType::TensorInt32 || fuse == Fuse::None,
          "a fused activation on int32 arithmetic is not supported");
    inputs.push_back({nnapi::Role::Fuse, cx.model().add_int_scalar(static_cast<int32_t>(fuse))});
  } else {
    check(fuse == Fuse::None, "internal: fused activation on an operation without one");
  }
  add_by_roles(cx.model(), op, inputs, {id});
  return {id, o};
}

OperandHandle emit_unary_to(LoweringContext& cx, Op op, const OperandHandle& x, const Operand& rec,
                            const Value* out) {
  int32_t id = make_output(cx, out, rec, &x);
  add_by_roles(cx.model(), op, {{nnapi::Role::Input, x.id}}, {id});
  return {id, rec};
}

OperandHandle emit_unary(LoweringContext& cx, Op op, const OperandHandle& x, const Value* out,
                         std::optional<QuantParams> out_quant) {
  // NeuralNetworks.h's activations take float and quantized tensors only.
  const bool activation =
      op == Op::Relu || op == Op::Relu1 || op == Op::Relu6 || op == Op::Logistic || op == Op::Tanh;
  check(!activation || x.op.type != OperandType::TensorInt32, [&] {
    return std::string(nnapi::op_name(op)) +
           " of an int32 (or bool) tensor is not supported: NNAPI's activations take float32 "
           "and quantized tensors only; convert the tensor with .float() first (or keep the "
           "node in TorchScript with --cpu-fallback)";
  });
  Operand o = x.op;
  if (o.type == OperandType::TensorQuant8Asymm) {
    // NNAPI fixes these outputs' parameters (as PyTorch's quantized kernels do).
    if (op == Op::Logistic) out_quant = QuantParams{1.0 / 256, 0};
    if (op == Op::Tanh) out_quant = QuantParams{1.0 / 128, 128};
  }
  if (out_quant) {
    o.scale = out_quant->scale;
    o.zero_point = out_quant->zero_point;
  }
  return emit_unary_to(cx, op, x, o, out);
}

OperandHandle emit_dequantize(LoweringContext& cx, const OperandHandle& a, const Value* out) {
  Operand o = a.op;
  o.type = OperandType::TensorFloat32;
  o.scale = 0.0;
  o.zero_point = 0;
  return emit_unary_to(cx, Op::Dequantize, a, o, out);
}

OperandHandle emit_quantize(LoweringContext& cx, const OperandHandle& a, double scale,
                            int64_t zero_point, const Value* out) {
  Operand o = a.op;
  o.type = OperandType::TensorQuant8Asymm;
  o.scale = scale;
  o.zero_point = zero_point;
  return emit_unary_to(cx, Op::Quantize, a, o, out);
}

RoleIds strided_slice_roles(LoweringContext& cx, int32_t x, const std::vector<int64_t>& begins,
                            const std::vector<int64_t>& ends, const std::vector<int64_t>& strides,
                            int32_t end_mask, int32_t shrink_mask) {
  using R = nnapi::Role;
  ModelBuilder& m = cx.model();
  // (A braced list's operands are made in the order written.)
  return {{R::Input, x},
          {R::Begin, m.add_int_vector(begins)},
          {R::End, m.add_int_vector(ends)},
          {R::Strides, m.add_int_vector(strides)},
          {R::BeginMask, m.add_int_scalar(0)},
          {R::EndMask, m.add_int_scalar(end_mask)},
          {R::ShrinkAxisMask, m.add_int_scalar(shrink_mask)}};
}

// `count` elements of x along PyTorch dim d, from `begin` in steps of `step`
// (1 or -1): a STRIDED_SLICE taking the other dims whole.
OperandHandle emit_take(LoweringContext& cx, const OperandHandle& x, int64_t d, int64_t begin,
                        int64_t count, int64_t step) {
  const auto rank = static_cast<int64_t>(x.op.shape.size());
  const int64_t axis = nnapi_axis(x.op, d);
  std::vector<int64_t> begins(rank, 0), ends(rank, 0), strides(rank, 1);
  int32_t end_mask = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (i != axis) end_mask |= 1 << i;
  }
  // One past the last element taken (not past the dim's end for steps > 1).
  int64_t end = step > 1 ? begin + (count - 1) * step + 1 : begin + count * step;
  if (end < 0) {  // a reversed slice down to element 0: NNAPI would read -1 as the last
    end_mask |= 1 << axis;
    end = 0;
  }
  begins[axis] = begin;
  ends[axis] = end;
  strides[axis] = step;
  Shape shape = x.op.shape;
  shape[d] = count;
  Operand o = x.op.with_shape(shape);
  if (x.op.type == OperandType::TensorInt32) {
    const int32_t id = make_output(cx, nullptr, o, &x);
    emit_int32_slice(cx, x, begins, ends, strides, end_mask, id);
    return {id, o};
  }
  const RoleIds inputs = strided_slice_roles(cx, x.id, begins, ends, strides, end_mask, 0);
  const int32_t id = make_output(cx, nullptr, o, &x);
  add_by_roles(cx.model(), nnapi::Op::StridedSlice, inputs, {id});
  return {id, o};
}

// TRANSPOSE of contiguous `x` by `perm` (no operation for the identity).
OperandHandle emit_permute(LoweringContext& cx, const OperandHandle& x,
                           const std::vector<int64_t>& perm) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == int64_t(i);
  if (identity) return x;
  // Flexible dims move with the data.
  const OperandHandle y = cx.add_output(nullptr, x.op, permuted_dims(x, perm));
  add_transpose(cx.model(), x.id, cx.model().add_int_vector(perm), y.id);
  return y;
}

}  // namespace nnapi_convert
