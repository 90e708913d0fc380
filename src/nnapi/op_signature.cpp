#include "nnapi_convert/op_signature.h"

#include <algorithm>

namespace nnapi {

namespace {

using R = Role;

// The roles' kinds, which tell forms of one input count apart.
enum class Kind { Tensor, Int, Bool, Float };

Kind kind_of(Role r) {
  switch (r) {
    case R::Input:
    case R::Filter:
    case R::Bias:
    case R::OutputShape:
    case R::SecondInput:
    case R::Weights:
    case R::Axes:
    case R::Paddings:
    case R::BlockShape:
    case R::Shape:
    case R::Perm:
    case R::Indices:
    case R::Begin:
    case R::Size:
    case R::End:
    case R::Strides:
    case R::Multiples:
    case R::Mask:
    case R::IfTrue:
    case R::IfFalse:
    case R::AlphaTensor:
      return Kind::Tensor;
    case R::Layout:
    case R::AlignCorners:
    case R::HalfPixelCenters:
    case R::AdjX:
    case R::AdjY:
      return Kind::Bool;
    case R::ScaleW:
    case R::ScaleH:
    case R::Beta:
    case R::PadValue:  // (INT32 for a quantized input: no two forms differ there)
    case R::LrnBias:
    case R::Alpha:
    case R::Gamma:
    case R::Epsilon:
      return Kind::Float;
    default:
      return Kind::Int;
  }
}

bool kind_matches(Kind k, OperandType t) {
  switch (k) {
    case Kind::Tensor:
      return is_tensor_type(t);
    case Kind::Int:
      return t == OperandType::Int32;
    case Kind::Bool:
      return t == OperandType::Bool;
    case Kind::Float:
      return t == OperandType::Float32 || t == OperandType::Float16;
  }
  return false;
}

std::vector<Role> concat(std::initializer_list<std::vector<Role>> parts) {
  std::vector<Role> all;
  for (const std::vector<Role>& p : parts) all.insert(all.end(), p.begin(), p.end());
  return all;
}

// The parts NeuralNetworks.h's windowed operations share.
const std::vector<Role> kConvTensors = {R::Input, R::Filter, R::Bias};
const std::vector<Role> kExplicitPadding = {R::PadLeft, R::PadRight, R::PadTop, R::PadBottom};
const std::vector<Role> kImplicitPadding = {R::PaddingScheme};
const std::vector<Role> kStrides = {R::StrideW, R::StrideH};
const std::vector<Role> kConvTail = {R::Fuse, R::Layout, R::DilationW, R::DilationH};
const std::vector<Role> kFuseLayout = {R::Fuse, R::Layout};

// A convolution's two forms; `middle` sits between the strides and the
// fused activation (DEPTHWISE_CONV_2D's multiplier, GROUPED_CONV_2D's
// groups); `tail` ends both. The counts are those of the explicit form; the
// implicit one has 3 fewer inputs.
std::vector<Form> conv_forms(const std::vector<Role>& middle, const std::vector<Role>& tail,
                             std::vector<size_t> counts) {
  std::vector<size_t> implicit_counts = counts;
  for (size_t& n : implicit_counts) n -= 3;
  return {{"explicit padding", concat({kConvTensors, kExplicitPadding, kStrides, middle, tail}),
           counts},
          {"implicit padding", concat({kConvTensors, kImplicitPadding, kStrides, middle, tail}),
           implicit_counts}};
}

std::vector<Form> pool_forms() {
  const std::vector<Role> window = {R::FilterW, R::FilterH};
  return {{"explicit padding",
           concat({{R::Input}, kExplicitPadding, kStrides, window, kFuseLayout}),
           {10, 11}},
          {"implicit padding",
           concat({{R::Input}, kImplicitPadding, kStrides, window, kFuseLayout}),
           {7, 8}}};
}

std::vector<Form> resize_forms() {
  const std::vector<Role> flags = {R::Layout, R::AlignCorners, R::HalfPixelCenters};
  return {{"by size", concat({{R::Input, R::OutputW, R::OutputH}, flags}), {3, 4, 5, 6}},
          {"by scale", concat({{R::Input, R::ScaleW, R::ScaleH}, flags}), {3, 4, 5, 6}}};
}

const std::vector<Signature>& table() {
  static const std::vector<Signature> t = [] {
    std::vector<Signature> s;
    s.push_back({Op::Conv2d, conv_forms({}, kConvTail, {10, 11, 13})});
    s.push_back({Op::DepthwiseConv2d, conv_forms({R::DepthMultiplier}, kConvTail, {11, 12, 14})});
    s.push_back({Op::GroupedConv2d, conv_forms({R::Groups}, kFuseLayout, {12})});
    s.push_back(
        {Op::TransposeConv2d,
         {{"explicit padding",
           concat({kConvTensors, kExplicitPadding, kStrides, kFuseLayout}),
           {11}},
          {"implicit padding",
           concat({kConvTensors, {R::OutputShape}, kImplicitPadding, kStrides, kFuseLayout}),
           {9}}}});
    for (Op op : {Op::AveragePool2d, Op::MaxPool2d, Op::L2Pool2d}) s.push_back({op, pool_forms()});
    for (Op op : {Op::ResizeBilinear, Op::ResizeNearestNeighbor}) s.push_back({op, resize_forms()});
    // One form each, with an optional trailing input.
    for (Op op : {Op::DepthToSpace, Op::SpaceToDepth})
      s.push_back({op, {{"", {R::Input, R::BlockSize, R::Layout}, {2, 3}}}});
    s.push_back({Op::Softmax, {{"", {R::Input, R::Beta, R::Axis}, {2, 3}}}});
    s.push_back({Op::LogSoftmax, {{"", {R::Input, R::Beta, R::Axis}, {3}}}});
    s.push_back({Op::L2Normalization, {{"", {R::Input, R::Axis}, {1, 2}}}});
    s.push_back({Op::LocalResponseNormalization,
                 {{"", {R::Input, R::Radius, R::LrnBias, R::Alpha, R::Beta, R::Axis}, {5, 6}}}});
    s.push_back({Op::BatchToSpaceNd, {{"", {R::Input, R::BlockShape, R::Layout}, {2, 3}}}});
    s.push_back(
        {Op::SpaceToBatchNd, {{"", {R::Input, R::BlockShape, R::Paddings, R::Layout}, {3, 4}}}});
    s.push_back({Op::BatchMatmul, {{"", {R::Input, R::SecondInput, R::AdjX, R::AdjY}, {2, 3, 4}}}});
    // One fixed form.
    for (Op op : {Op::Add, Op::Mul, Op::Sub, Op::Div})
      s.push_back({op, {{"", {R::Input, R::SecondInput, R::Fuse}, {3}}}});
    s.push_back({Op::FullyConnected, {{"", {R::Input, R::Weights, R::Bias, R::Fuse}, {4}}}});
    for (Op op : {Op::Mean, Op::ReduceSum, Op::ReduceMax, Op::ReduceMin, Op::ReduceProd,
                  Op::ReduceAll, Op::ReduceAny})
      s.push_back({op, {{"", {R::Input, R::Axes, R::KeepDims}, {3}}}});
    s.push_back({Op::Pad, {{"", {R::Input, R::Paddings}, {2}}}});
    s.push_back({Op::PadV2, {{"", {R::Input, R::Paddings, R::PadValue}, {3}}}});
    s.push_back({Op::Reshape, {{"", {R::Input, R::Shape}, {2}}}});
    s.push_back({Op::Transpose, {{"", {R::Input, R::Perm}, {1, 2}}}});
    s.push_back({Op::Gather, {{"", {R::Input, R::Axis, R::Indices}, {3}}}});
    for (Op op : {Op::ArgMax, Op::ArgMin}) s.push_back({op, {{"", {R::Input, R::Axis}, {2}}}});
    s.push_back({Op::InstanceNormalization,
                 {{"", {R::Input, R::Gamma, R::Beta, R::Epsilon, R::Layout}, {5}}}});
    s.push_back({Op::Slice, {{"", {R::Input, R::Begin, R::Size}, {3}}}});
    s.push_back(
        {Op::StridedSlice,
         {{"",
           {R::Input, R::Begin, R::End, R::Strides, R::BeginMask, R::EndMask, R::ShrinkAxisMask},
           {7}}}});
    s.push_back({Op::Split, {{"", {R::Input, R::Axis, R::NumSplits}, {3}}}});
    s.push_back({Op::Tile, {{"", {R::Input, R::Multiples}, {2}}}});
    // Any number of input tensors, then the axis.
    s.push_back({Op::Concatenation, {{"", {R::Input, R::Axis}, {2}, true}}});
    // The elementwise operations of two tensors, and those of one.
    for (Op op : {Op::Maximum, Op::Minimum, Op::Pow, Op::Equal, Op::NotEqual, Op::Less,
                  Op::LessEqual, Op::Greater, Op::GreaterEqual, Op::LogicalAnd, Op::LogicalOr})
      s.push_back({op, {{"", {R::Input, R::SecondInput}, {2}}}});
    for (Op op : {Op::Relu, Op::Relu1, Op::Relu6, Op::Logistic, Op::Tanh, Op::HardSwish, Op::Neg,
                  Op::Abs, Op::Floor, Op::Exp, Op::Log, Op::Sqrt, Op::Rsqrt, Op::Sin,
                  Op::LogicalNot, Op::Quantize, Op::Dequantize, Op::Cast})
      s.push_back({op, {{"", {R::Input}, {1}}}});
    s.push_back({Op::Prelu, {{"", {R::Input, R::AlphaTensor}, {2}}}});
    s.push_back({Op::Select, {{"", {R::Mask, R::IfTrue, R::IfFalse}, {3}}}});
    s.push_back({Op::Squeeze, {{"", {R::Input, R::Axes}, {1, 2}}}});
    s.push_back({Op::ExpandDims, {{"", {R::Input, R::Axis}, {2}}}});
    s.push_back({Op::TopKV2, {{"", {R::Input, R::K}, {2}}}});
    s.push_back({Op::ChannelShuffle, {{"", {R::Input, R::Groups, R::Axis}, {3}}}});
    return s;
  }();
  return t;
}

}  // namespace

const char* role_name(Role r) {
  switch (r) {
    case R::Input:
      return "input";
    case R::Filter:
      return "filter";
    case R::Bias:
      return "bias";
    case R::OutputShape:
      return "output shape";
    case R::PaddingScheme:
      return "padding scheme";
    case R::PadLeft:
      return "padding left";
    case R::PadRight:
      return "padding right";
    case R::PadTop:
      return "padding top";
    case R::PadBottom:
      return "padding bottom";
    case R::StrideW:
      return "stride width";
    case R::StrideH:
      return "stride height";
    case R::DepthMultiplier:
      return "depth multiplier";
    case R::Groups:
      return "groups";
    case R::FilterW:
      return "filter width";
    case R::FilterH:
      return "filter height";
    case R::Fuse:
      return "fused activation";
    case R::Layout:
      return "NCHW layout flag";
    case R::DilationW:
      return "dilation width";
    case R::DilationH:
      return "dilation height";
    case R::OutputW:
      return "output width";
    case R::OutputH:
      return "output height";
    case R::ScaleW:
      return "width scale";
    case R::ScaleH:
      return "height scale";
    case R::AlignCorners:
      return "align_corners";
    case R::HalfPixelCenters:
      return "half_pixel_centers";
    case R::BlockSize:
      return "block size";
    case R::Beta:
      return "beta";
    case R::Axis:
      return "axis";
    case R::SecondInput:
      return "second input";
    case R::Weights:
      return "weights";
    case R::Axes:
      return "axes";
    case R::KeepDims:
      return "keep_dims";
    case R::Paddings:
      return "paddings";
    case R::PadValue:
      return "pad value";
    case R::AdjX:
      return "adj_x";
    case R::AdjY:
      return "adj_y";
    case R::Radius:
      return "radius";
    case R::LrnBias:
      return "bias scalar";
    case R::Alpha:
      return "alpha";
    case R::Gamma:
      return "gamma";
    case R::Epsilon:
      return "epsilon";
    case R::BlockShape:
      return "block shape";
    case R::Shape:
      return "shape";
    case R::Perm:
      return "perm";
    case R::Indices:
      return "indices";
    case R::Begin:
      return "begin";
    case R::Size:
      return "size";
    case R::End:
      return "end";
    case R::Strides:
      return "strides";
    case R::BeginMask:
      return "begin_mask";
    case R::EndMask:
      return "end_mask";
    case R::ShrinkAxisMask:
      return "shrink_axis_mask";
    case R::NumSplits:
      return "num_splits";
    case R::Multiples:
      return "multiples";
    case R::Mask:
      return "mask";
    case R::IfTrue:
      return "value if true";
    case R::IfFalse:
      return "value if false";
    case R::AlphaTensor:
      return "alpha tensor";
    case R::K:
      return "k";
  }
  return "operand";
}

size_t Form::at(Role r) const {
  auto it = std::find(roles.begin(), roles.end(), r);
  const size_t i = it == roles.end() ? npos : static_cast<size_t>(it - roles.begin());
  return variadic && i > 0 ? npos : i;
}

size_t Form::at(Role r, size_t n) const {
  const size_t i = at(r);
  if (!variadic || i != npos) return i;
  auto it = std::find(roles.begin(), roles.end(), r);
  // Counted from the end: the last role is input n - 1.
  return it == roles.end() ? npos : n - static_cast<size_t>(roles.end() - it);
}

Role Form::role_at(size_t i, size_t n) const {
  if (!variadic) return roles[i];
  const size_t repeats = n - (roles.size() - 1);
  return i < repeats ? roles[0] : roles[i - repeats + 1];
}

bool Form::allows(size_t n) const {
  if (variadic) return n >= counts.front();
  return std::find(counts.begin(), counts.end(), n) != counts.end();
}

std::vector<size_t> Signature::counts() const {
  std::vector<size_t> all;
  for (const Form& f : forms) all.insert(all.end(), f.counts.begin(), f.counts.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

const Signature* signature(Op op) {
  for (const Signature& s : table())
    if (s.op == op) return &s;
  return nullptr;
}

const Signature* signature_of_code(int32_t code) {
  return op_name_or_null(code) ? signature(static_cast<Op>(code)) : nullptr;
}

const Form* form_of(const Signature& s, size_t n,
                    const std::function<OperandType(size_t)>& type_at) {
  std::vector<const Form*> fit;
  for (const Form& f : s.forms)
    if (f.allows(n)) fit.push_back(&f);
  if (fit.size() < 2) return fit.empty() ? nullptr : fit[0];
  for (size_t i = 0; i < n; ++i) {
    const Kind k = kind_of(fit[0]->role_at(i, n));
    const bool differ = std::any_of(fit.begin(), fit.end(),
                                    [&](const Form* f) { return kind_of(f->role_at(i, n)) != k; });
    if (!differ) continue;
    const OperandType t = type_at(i);
    for (const Form* f : fit)
      if (kind_matches(kind_of(f->role_at(i, n)), t)) return f;
    break;
  }
  return fit[0];
}

std::vector<int32_t> arrange_inputs(Op op, const std::vector<std::pair<Role, int32_t>>& given) {
  const Signature* s = signature(op);
  if (!s) return {};
  const size_t n = given.size();
  for (const Form& f : s->forms) {
    if (!f.allows(n)) continue;
    std::vector<int32_t> ids(n);
    std::vector<bool> filled(n, false);
    bool ok = true;
    for (const auto& [role, id] : given) {
      // The first free position of the role (a repeated role's in the order
      // given).
      size_t i = 0;
      while (i < n && (filled[i] || f.role_at(i, n) != role)) ++i;
      if (i == n) {
        ok = false;
        break;
      }
      ids[i] = id;
      filled[i] = true;
    }
    if (ok) return ids;
  }
  return {};
}

}  // namespace nnapi
