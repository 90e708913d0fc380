// Shape and layout ops: unsqueeze, reshape, flatten, slice, size, cat, and
// the identity ops (to, detach).
#include <ATen/ATen.h>

#include <limits>

#include "lower/registry.h"

namespace nnapi_convert {
namespace {

using nnapi::Op;

void lower_identity(LoweringContext& cx, const Node* node) {
  cx.alias(node->output(), node->input(0));
}

// aten::to(Tensor, ...): a device move is free; a dtype change is not supported.
void lower_to(LoweringContext& cx, const Node* node) {
  for (size_t i = 1; i < node->inputs().size(); ++i) {
    const Value* in = node->input(i);
    if (in->type()->kind() != c10::TypeKind::IntType || !cx.has_constant(in)) continue;
    // The ScalarType argument of aten::to.
    auto dtype = static_cast<c10::ScalarType>(cx.constant_int(in));
    auto [id, op] = cx.get_operand(node->input(0));
    (void)id;
    bool same = (dtype == at::kFloat && op.type == nnapi::OperandType::TensorFloat32) ||
                (dtype == at::kInt && op.type == nnapi::OperandType::TensorInt32) ||
                (dtype == at::kQUInt8 && op.type == nnapi::OperandType::TensorQuant8Asymm);
    check(same, std::string("aten::to changes the dtype to ") + c10::toString(dtype) +
                    ", which NNAPI conversion does not support; only device moves are free");
    break;
  }
  lower_identity(cx, node);
}

void lower_unsqueeze(LoweringContext& cx, const Node* node) {
  auto [in_id, in] = cx.get_operand_fixed_size(node->input(0));
  int64_t dim = cx.constant_int(node->input(1));
  check(in.dim_order == DimOrder::Contiguous,
        "unsqueeze of a channels-last tensor is not supported");
  int64_t rank = static_cast<int64_t>(in.shape.size());
  int64_t real_dim = dim >= 0 ? dim : dim + rank + 1;
  check(real_dim >= 0 && real_dim <= rank, "unsqueeze dim out of range");
  Shape out_shape = in.shape;
  out_shape.insert(out_shape.begin() + real_dim, 1);
  int32_t dim_id = cx.model().add_int_scalar(static_cast<int32_t>(dim));
  int32_t out_id = cx.add_tensor_operand(node->output(), in.with_shape(out_shape));
  cx.model().add_operation(Op::ExpandDims, {in_id, dim_id}, {out_id});
}

void lower_reshape(LoweringContext& cx, const Node* node) {
  auto [in_id, in] = cx.get_operand_fixed_size(node->input(0));
  std::vector<int64_t> shape = cx.constant_int_list(node->input(1));
  bool trivial = shape.size() == 2 && shape[1] == -1;
  check(in.dim_order == DimOrder::Contiguous || trivial,
        "reshape of an NHWC tensor is only supported if the target size is [X, -1]");
  Shape out_shape;
  try {
    out_shape = at::zeros({1}).expand(in.shape).reshape(shape).sizes().vec();
  } catch (const c10::Error& e) {
    fail("can't reshape " + shape_str(in.shape) + " to " + shape_str(shape) + ": " +
         e.what_without_backtrace());
  }
  Operand out = in.with_shape(out_shape);
  out.dim_order = DimOrder::Contiguous;
  int32_t shape_id = cx.model().add_int_vector(shape);
  int32_t out_id = cx.add_tensor_operand(node->output(), out);
  cx.model().add_operation(Op::Reshape, {in_id, shape_id}, {out_id});
}

void lower_flatten(LoweringContext& cx, const Node* node) {
  auto [in_id, in] = cx.get_operand(node->input(0));
  int64_t start = cx.constant_int(node->input(1));
  int64_t end = cx.constant_int(node->input(2));
  const Shape& s = in.shape;
  int64_t rank = static_cast<int64_t>(s.size());
  bool trivial = rank == 4 && (s[1] == 1 || (s[2] == 1 && s[3] == 1));
  check(in.dim_order == DimOrder::Contiguous || trivial,
        "flatten of an NHWC tensor is only supported when C = 1 or H = W = 1");
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  check(start >= 0 && end < rank && start <= end, "flatten dims out of range");
  int64_t product = 1;
  for (int64_t d = start; d <= end; ++d) {
    check(s[d] != 0, "flattening flexible dims is not supported");
    product *= s[d];
  }
  Shape out_shape(s.begin(), s.begin() + start);
  out_shape.push_back(product);
  out_shape.insert(out_shape.end(), s.begin() + end + 1, s.end());
  int flexible = 0;
  for (int64_t d = 0; d < rank; ++d) flexible += (d < start || d > end) && s[d] == 0;
  check(flexible <= 1, "only 1 dim can be flexible when flattening");
  Operand out = in.with_shape(out_shape);
  out.dim_order = DimOrder::Contiguous;
  int32_t out_id = cx.add_tensor_operand(node->output(), out);
  int64_t first_flex = std::find(s.begin(), s.end(), 0) - s.begin();
  std::vector<int64_t> target;
  for (size_t i = 0; i < out_shape.size(); ++i) {
    if (out_shape[i] == 0) cx.forward_operand_shape(out_id, static_cast<int64_t>(i), in_id, first_flex);
    target.push_back(out_shape[i] != 0 ? out_shape[i] : -1);
  }
  int32_t target_id = cx.model().add_int_vector(target);
  cx.model().add_operation(Op::Reshape, {in_id, target_id}, {out_id});
}

void lower_slice(LoweringContext& cx, const Node* node) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  auto [in_id, in] = cx.get_operand(node->input(0));
  int64_t rank = static_cast<int64_t>(in.shape.size());
  int64_t dim = py_index(cx.constant(node->input(1)).value.toInt(), rank);
  auto optional_int = [&](const Value* v, int64_t none_value) {
    const Constant& c = cx.constant(v);
    return c.value.isNone() ? none_value : c.value.toInt();
  };
  int64_t start = optional_int(node->input(2), 0);
  int64_t stop = optional_int(node->input(3), kMax);
  int64_t step = cx.constant(node->input(4)).value.toInt();
  int64_t size = in.shape[dim];
  if (start < 0) {
    start += size;
  } else if (start == kMax) {
    start = 0;
  }
  if (start == 0 && stop == kMax) {
    lower_identity(cx, node);
    return;
  }
  check(size != 0, "unable to slice with flexible shape (dim " + std::to_string(dim) +
                       " of " + shape_str(in.shape) + ")");
  if (stop < 0) {
    stop += size;
  } else if (stop > size) {
    stop = size;  // Python slicing clamps; so does PyTorch
  }
  check(start < stop, "slice start value should be less than stop value");
  check(step > 0, "slice step must be positive");
  Shape out_shape = in.shape;
  out_shape[dim] = (stop - start + step - 1) / step;
  int32_t out_id = cx.add_tensor_operand(node->output(), in.with_shape(out_shape));
  int32_t end_mask = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (out_shape[i] == 0) {
      cx.forward_operand_shape(out_id, i, in_id, i);
      end_mask |= 1 << i;
    }
  }
  std::vector<int64_t> begins(rank, 0), ends = in.shape, strides(rank, 1);
  begins[dim] = start;
  ends[dim] = stop;
  strides[dim] = step;
  ModelBuilder& m = cx.model();
  std::vector<int32_t> inputs = {in_id,
                                 m.add_int_vector(begins),
                                 m.add_int_vector(ends),
                                 m.add_int_vector(strides),
                                 m.add_int_scalar(0),
                                 m.add_int_scalar(end_mask),
                                 m.add_int_scalar(0)};
  m.add_operation(Op::StridedSlice, inputs, {out_id});
}

void lower_size(LoweringContext& cx, const Node* node) {
  auto [in_id, in] = cx.get_operand_fixed_size(node->input(0));
  (void)in_id;
  int64_t dim = py_index(cx.constant(node->input(1)).value.toInt(),
                         static_cast<int64_t>(in.shape.size()));
  cx.add_constant(node->output(), node->output()->type(), c10::IValue(in.shape[dim]));
}

void lower_cat(LoweringContext& cx, const Node* node) {
  const auto& tensors = cx.sequence(node->input(0));
  int64_t dim = cx.constant_int(node->input(1));
  check(!tensors.empty(), "cat of an empty list");
  std::vector<int32_t> in_ids;
  Operand out;
  int64_t rank = 0;
  int64_t d = 0;
  int64_t out_dim_size = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    auto [id, op] = cx.get_operand(tensors[i]);
    if (i == 0) {
      out = op;
      rank = static_cast<int64_t>(op.shape.size());
      d = py_index(dim, rank);
    }
    check(op.type == out.type, "cat inputs have different types");
    check(op.dim_order == out.dim_order, "cat inputs have different memory layouts");
    Shape a = op.shape, b = out.shape;
    check(static_cast<int64_t>(a.size()) == rank, "cat inputs have different ranks");
    a[d] = b[d] = -1;
    check(a == b, "cat inputs differ outside the cat dim: " + shape_str(op.shape) + " vs " +
                      shape_str(out.shape));
    in_ids.push_back(id);
    out_dim_size += op.shape[d];
  }
  out.shape[d] = out_dim_size;
  int64_t nnapi_dim = dim;
  if (out.dim_order == DimOrder::ChannelsLast) {
    check(rank == 4, "channels-last cat needs 4 dims");
    static const int64_t kMap[] = {0, 3, 1, 2};
    nnapi_dim = kMap[d];
  }
  int32_t out_id = cx.add_tensor_operand(node->output(), out);
  for (int64_t i = 0; i < rank; ++i) {
    if (out.shape[i] != 0) continue;
    if (i == d) {
      std::string sum;
      for (size_t k = 0; k < in_ids.size(); ++k) {
        sum += (k ? " + " : "") + flex_name(in_ids[k], d);
      }
      cx.compute_operand_shape(out_id, i, sum);
    } else {
      cx.forward_operand_shape(out_id, i, in_ids[0], i);
    }
  }
  std::vector<int32_t> inputs = in_ids;
  inputs.push_back(cx.model().add_int_scalar(static_cast<int32_t>(nnapi_dim)));
  cx.model().add_operation(Op::Concatenation, inputs, {out_id});
}

}  // namespace

void register_shape_ops(LoweringTable& t) {
  t.add("aten::to", lower_to);
  t.add("aten::detach", lower_identity);
  t.add("aten::unsqueeze", lower_unsqueeze);
  t.add("aten::reshape", lower_reshape);
  t.add("aten::flatten", lower_flatten);
  t.add("aten::slice", lower_slice);
  t.add("aten::size", lower_size);
  t.add("aten::cat", lower_cat);
}

}  // namespace nnapi_convert
