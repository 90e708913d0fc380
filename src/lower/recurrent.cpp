// Recurrent layers: aten::lstm, aten::quantized_lstm (dynamic quantization,
// on its dequantized weights), aten::gru and nn.RNN's aten::rnn_tanh and
// aten::rnn_relu, unrolled over a fixed number of time steps into
// FULLY_CONNECTED, SPLIT, ADD, MUL, SUB, LOGISTIC, TANH, RELU, CONCATENATION
// and RESHAPE (NNAPI feature level 1-2 operations).
//
// Per layer and direction, the input projection of every time step is one
// FULLY_CONNECTED over the (rows, features) matrix of the whole sequence
// (both biases folded in where the cell allows), SPLIT into one part per step;
// each step then adds the recurrent projection of the previous hidden state.
// From a zero initial state (the default) the first step has no recurrent term.
#include <ATen/ATen.h>

#include <optional>

#include "lower/emit.h"
#include "lower/packed_params.h"
#include "lower/registry.h"
#include "lower/signature_inputs.h"

namespace nnapi_convert {
namespace {

using nnapi::Fuse;
using nnapi::Op;
using nnapi::OperandType;

enum class Cell { Lstm, Gru, RnnTanh, RnnRelu };

struct RnnSpec {
  Cell cell;
  const char* name;  // for messages
  int64_t gates;     // 4 for LSTM (i, f, g, o), 3 for GRU (r, z, n), 1 for RNN
  bool bias;
  int64_t layers;
  bool bidirectional;
  bool batch_first;
  int64_t hidden;
};

// One layer and direction's parameters, as nn.LSTM / nn.GRU keep them.
struct Weights {
  at::Tensor w_ih, w_hh, b_ih, b_hh;  // biases are zeros without bias
};

// A float32 weight operand of its own storage (not a view into another tensor).
OperandHandle weight(LoweringContext& cx, const at::Tensor& t) {
  const int32_t id = cx.add_weight(t.clone(at::MemoryFormat::Contiguous), DimOrder::Contiguous);
  return {id, cx.operand(id)};
}

// x (rows, K) times the (N, K) weight w, plus b: (rows, N).
OperandHandle fully_connected(LoweringContext& cx, const OperandHandle& x, const OperandHandle& w,
                              const OperandHandle& b) {
  ModelBuilder& m = cx.model();
  const Operand o = x.op.with_shape({x.op.shape[0], w.op.shape[0]});
  const int32_t id = make_output(cx, nullptr, o);
  const int32_t fuse = m.add_int_scalar(static_cast<int32_t>(Fuse::None));
  add_fully_connected(m, x.id, w.id, b.id, fuse, id);
  return {id, o};
}

// `n` equal parts of 2-D `x` along `dim`; `x` itself when n is 1.
std::vector<OperandHandle> split_equal(LoweringContext& cx, const OperandHandle& x, int64_t dim,
                                       int64_t n) {
  if (n == 1) return {x};
  std::vector<OperandHandle> parts;
  for (int32_t id : emit_split(cx, x, dim, std::vector<int64_t>(n, x.op.shape[dim] / n))) {
    parts.push_back({id, cx.operand(id)});
  }
  return parts;
}

OperandHandle concat(LoweringContext& cx, const std::vector<OperandHandle>& parts, int64_t dim) {
  return parts.size() == 1 ? parts[0] : emit_concat(cx, parts, dim);
}

OperandHandle reshape(LoweringContext& cx, const OperandHandle& x, const Shape& shape,
                      const Value* out = nullptr) {
  std::vector<SymInt> dims;
  for (int64_t d : shape) dims.push_back({d, ""});
  return emit_reshape(cx, x, dims, out);
}

// An initial state: none for zeros.
using State = std::optional<OperandHandle>;

// The hidden state after every step of one direction of one layer. `gx`
// holds the input projections of the steps in time order; `h`, `c` the
// initial state; `c_last` receives an LSTM's final cell state.
std::vector<OperandHandle> run_direction(LoweringContext& cx, const RnnSpec& s, const Weights& w,
                                         const std::vector<OperandHandle>& gx, bool reverse,
                                         State h, State c, OperandHandle* c_last) {
  const int64_t steps = static_cast<int64_t>(gx.size());
  const int64_t H = s.hidden;
  std::vector<OperandHandle> hs(steps);
  // The recurrent projection's bias: none for LSTM (folded into the input
  // projection); b_hn for GRU, which r multiplies.
  at::Tensor rec_bias = at::zeros({s.gates * H}, at::kFloat);
  if (s.cell == Cell::Gru) rec_bias.slice(0, 2 * H) = w.b_hh.slice(0, 2 * H);
  // Weight operands shared by the steps, made when a step first needs them.
  std::optional<OperandHandle> w_hh, b_hh;
  for (int64_t k = 0; k < steps; ++k) {
    const int64_t t = reverse ? steps - 1 - k : k;
    std::vector<OperandHandle> xg = split_equal(cx, gx[t], 1, s.gates);
    std::vector<OperandHandle> hg;
    if (h) {
      if (!w_hh) {
        w_hh = weight(cx, w.w_hh);
        b_hh = weight(cx, rec_bias);
      }
      hg = split_equal(cx, fully_connected(cx, *h, *w_hh, *b_hh), 1, s.gates);
    }
    // Input and recurrent terms of gate i (the recurrent one is zero at the first step).
    auto gate = [&](int64_t i, Op activation) {
      OperandHandle sum = h ? emit_binary(cx, Op::Add, xg[i], hg[i]) : xg[i];
      return emit_unary(cx, activation, sum);
    };
    if (s.cell == Cell::Lstm) {
      // c' = f * c + i * g, h' = o * tanh(c')
      OperandHandle i = gate(0, Op::Logistic), g = gate(2, Op::Tanh), o = gate(3, Op::Logistic);
      OperandHandle c_new = emit_binary(cx, Op::Mul, i, g);
      if (c) {
        c_new =
            emit_binary(cx, Op::Add, emit_binary(cx, Op::Mul, gate(1, Op::Logistic), *c), c_new);
      }
      c = c_new;
      h = emit_binary(cx, Op::Mul, o, emit_unary(cx, Op::Tanh, *c));
    } else if (s.cell != Cell::Gru) {
      // h' = tanh or relu(x W_ih^T + b_ih + b_hh + h W_hh^T)
      h = gate(0, s.cell == Cell::RnnRelu ? Op::Relu : Op::Tanh);
    } else {
      // n = tanh(x_n + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h = n + z * (h - n);
      // from the zero state, r * b_hn and h' = n - z * n.
      OperandHandle z = gate(1, Op::Logistic);
      OperandHandle xn = xg[2];
      if (h || s.bias) {
        const OperandHandle hn = h ? hg[2] : weight(cx, w.b_hh.slice(0, 2 * H));
        xn = emit_binary(cx, Op::Add, xn, emit_binary(cx, Op::Mul, gate(0, Op::Logistic), hn));
      }
      OperandHandle n = emit_unary(cx, Op::Tanh, xn);
      h = h ? emit_binary(cx, Op::Add, n,
                          emit_binary(cx, Op::Mul, z, emit_binary(cx, Op::Sub, *h, n)))
            : emit_binary(cx, Op::Sub, n, emit_binary(cx, Op::Mul, z, n));
    }
    hs[t] = *h;
  }
  if (c_last) *c_last = *c;
  return hs;
}

// The input bias of the per-sequence projection: b_ih + b_hh for LSTM and
// RNN; for
// GRU, b_ih plus the r and z parts of b_hh (b_hn stays inside r * (...)).
at::Tensor input_bias(const RnnSpec& s, const Weights& w) {
  at::Tensor b = w.b_ih + w.b_hh;
  if (s.cell == Cell::Gru) b.slice(0, 2 * s.hidden) = w.b_ih.slice(0, 2 * s.hidden);
  return b;
}

// The parameters of every layer and direction, checked against the spec.
// Sets s.hidden from the first weight_hh.
std::vector<Weights> read_weights(RnnSpec& s, const std::vector<at::Tensor>& p,
                                  int64_t input_size) {
  check(p.size() >= 2 && p[1].dim() == 2,
        [&] { return std::string(s.name) + " has a malformed weight_hh"; });
  s.hidden = p[1].size(1);
  const int64_t dirs = s.bidirectional ? 2 : 1;
  const int64_t per = s.bias ? 4 : 2;
  check(static_cast<int64_t>(p.size()) == s.layers * dirs * per, [&] {
    return std::string(s.name) + " has " + std::to_string(p.size()) + " parameter tensors where " +
           std::to_string(s.layers * dirs * per) +
           " were expected; projections (proj_size > 0) are not supported: use proj_size=0";
  });
  std::vector<Weights> out;
  for (int64_t l = 0; l < s.layers; ++l) {
    const int64_t in_features = l == 0 ? input_size : dirs * s.hidden;
    for (int64_t d = 0; d < dirs; ++d) {
      const at::Tensor* q = &p[(l * dirs + d) * per];
      Weights w;
      w.w_ih = q[0];
      w.w_hh = q[1];
      for (const at::Tensor& t : {q[0], q[1]}) {
        check(t.scalar_type() == at::kFloat,
              [&] { return std::string(s.name) + " weights must be float32"; });
      }
      check(w.w_ih.dim() == 2 && w.w_ih.size(0) == s.gates * s.hidden &&
                w.w_ih.size(1) == in_features && w.w_hh.dim() == 2 &&
                w.w_hh.size(0) == s.gates * s.hidden && w.w_hh.size(1) == s.hidden,
            [&] {
              return std::string(s.name) + " layer " + std::to_string(l) +
                     " has weights of unexpected shapes (the input has " +
                     std::to_string(in_features) + " features)";
            });
      const at::Tensor zero = at::zeros({s.gates * s.hidden}, at::kFloat);
      w.b_ih = s.bias ? q[2].to(at::kFloat) : zero;
      w.b_hh = s.bias ? q[3].to(at::kFloat) : zero;
      out.push_back(w);
    }
  }
  return out;
}

// The initial states of every layer and direction, (B, H) each, from one
// (layers * directions, B, H) tensor: a model tensor, or a constant (none
// when it is zero: traced modules make the default state with aten::zeros).
std::vector<State> initial_states(LoweringContext& cx, const RnnSpec& s, const Value* v,
                                  const at::Tensor& constant, int64_t B) {
  const int64_t count = s.layers * (s.bidirectional ? 2 : 1);
  if (constant.defined() && !constant.any().item<bool>()) return std::vector<State>(count);
  const OperandHandle x =
      constant.defined() ? weight(cx, constant.to(at::kFloat)) : cx.get_operand_fixed_size(v);
  check(x.op.type == OperandType::TensorFloat32 && x.op.dim_order == DimOrder::Contiguous &&
            x.op.shape == Shape({count, B, s.hidden}),
        [&] {
          return std::string(s.name) + " needs a float32 initial state of shape " +
                 shape_str({count, B, s.hidden}) + ", got " + shape_str(x.op.shape);
        });
  std::vector<State> out;
  for (const OperandHandle& part : split_equal(cx, x, 0, count)) {
    out.push_back(reshape(cx, part, {B, s.hidden}));
  }
  return out;
}

// The initial states of hx (a tensor for GRU and RNN, [h0, c0] for LSTM): one list per tensor.
std::vector<std::vector<State>> initial_states(LoweringContext& cx, const RnnSpec& s,
                                               const Value* hx, int64_t B) {
  std::vector<std::vector<State>> out;
  if (s.cell != Cell::Lstm) {
    const bool constant = cx.has_constant(hx) && !cx.has_operand(hx);
    out.push_back(initial_states(cx, s, hx, constant ? cx.constant_tensor(hx) : at::Tensor(), B));
  } else if (cx.has_constant(hx)) {
    for (const at::Tensor& t : cx.constant(hx).value.toTensorVector()) {
      out.push_back(initial_states(cx, s, nullptr, t, B));
    }
  } else {
    for (const Value* v : cx.sequence(hx)) {
      const bool constant = cx.has_constant(v) && !cx.has_operand(v);
      out.push_back(initial_states(cx, s, v, constant ? cx.constant_tensor(v) : at::Tensor(), B));
    }
  }
  check(out.size() == (s.cell == Cell::Lstm ? 2u : 1u),
        [&] { return std::string(s.name) + " needs hx as (h_0, c_0)"; });
  return out;
}

// aten::lstm.input(input, hx[], params[], has_biases, num_layers, dropout,
//                  train, bidirectional, batch_first) -> (output, h_n, c_n)
// aten::gru.input(input, hx, params[], has_biases, num_layers, dropout,
//                 train, bidirectional, batch_first) -> (output, h_n)
// (aten::rnn_tanh.input and aten::rnn_relu.input as aten::gru.input)
// aten::quantized_lstm takes the inputs of aten::lstm, then dtype and
// use_dynamic, with its parameters as CellParamsBase objects: `params`, when
// given, are their weights (see quantized_lstm_params).
void lower_rnn(LoweringContext& cx, const Node* node, Cell cell,
               const std::vector<at::Tensor>* params = nullptr) {
  const bool lstm = cell == Cell::Lstm;
  const char* name = params                  ? "aten::quantized_lstm"
                     : lstm                  ? "aten::lstm"
                     : cell == Cell::Gru     ? "aten::gru"
                     : cell == Cell::RnnTanh ? "aten::rnn_tanh"
                                             : "aten::rnn_relu";
  check(node->inputs().size() == (params ? 11u : 9u) && node->outputs().size() == (lstm ? 3u : 2u),
        [&] { return std::string("malformed ") + name; });
  check(node->input(2)->type()->kind() == c10::TypeKind::ListType, [&] {
    return std::string(name) +
           " over a packed sequence (pack_padded_sequence) is not supported; pass a padded "
           "tensor of fixed length";
  });
  RnnSpec s{cell,
            name,
            lstm                ? 4
            : cell == Cell::Gru ? 3
                                : 1,
            cx.constant_bool(node->input(3)),
            cx.constant_int(node->input(4)),
            cx.constant_bool(node->input(7)),
            cx.constant_bool(node->input(8)),
            0};
  const double dropout = cx.constant_number(node->input(5));
  check(!cx.constant_bool(node->input(6)) || dropout == 0, [&] {
    return std::string(name) +
           " with dropout in training mode is random; export the model in eval mode";
  });
  check(s.layers >= 1, "num_layers must be at least 1");

  auto [x_id, x_op] = cx.get_operand(node->input(0));
  check(x_op.type == OperandType::TensorFloat32 && x_op.dim_order == DimOrder::Contiguous &&
            x_op.shape.size() == 3,
        [&] {
          return std::string(name) + " needs a contiguous 3-D float32 input, got " +
                 shape_str(x_op.shape);
        });
  const int64_t time_dim = s.batch_first ? 1 : 0;
  check(x_op.shape[time_dim] != 0, [&] {
    return std::string(name) +
           " over a flexible sequence length is not supported (it is unrolled per time step); "
           "give the sequence dimension a fixed size in --input";
  });
  check(x_op.shape[1 - time_dim] != 0 && x_op.shape[2] != 0, [&] {
    return std::string(name) + " needs fixed batch and feature sizes, got " +
           shape_str(x_op.shape) + "; give them fixed sizes in --input";
  });
  const int64_t T = x_op.shape[time_dim], B = x_op.shape[1 - time_dim];
  std::vector<at::Tensor> constant_params;
  if (!params) {
    const Constant& c = cx.constant(node->input(2));
    check(c.value.isTensorList(), [&] {
      return std::string(s.name) + " needs its parameters as a constant list of tensors (frozen)";
    });
    constant_params = c.value.toTensorVector();
  }
  const std::vector<Weights> weights =
      read_weights(s, params ? *params : constant_params, x_op.shape[2]);
  const std::vector<std::vector<State>> init = initial_states(cx, s, node->input(1), B);

  const int64_t dirs = s.bidirectional ? 2 : 1;
  // The sequence as a (rows, features) matrix: rows in (t, b) order, or (b, t) batch-first.
  OperandHandle seq = reshape(cx, {x_id, x_op}, {T * B, x_op.shape[2]});
  std::vector<OperandHandle> h_n, c_n;
  for (int64_t l = 0; l < s.layers; ++l) {
    std::vector<std::vector<OperandHandle>> outs;
    for (int64_t d = 0; d < dirs; ++d) {
      const Weights& w = weights[l * dirs + d];
      const OperandHandle w_ih = weight(cx, w.w_ih);
      const OperandHandle b_ih = weight(cx, input_bias(s, w));
      OperandHandle g = fully_connected(cx, seq, w_ih, b_ih);
      // One part per step: seq-first rows are t-major; batch-first, each row
      // of (B, T * gates * H) holds a batch entry's steps side by side.
      if (s.batch_first) g = reshape(cx, g, {B, T * s.gates * s.hidden});
      std::vector<OperandHandle> gx = split_equal(cx, g, s.batch_first ? 1 : 0, T);
      OperandHandle c_last{};
      outs.push_back(run_direction(cx, s, w, gx, d == 1, init[0][l * dirs + d],
                                   lstm ? init[1][l * dirs + d] : State(),
                                   lstm ? &c_last : nullptr));
      h_n.push_back(outs.back()[d == 1 ? 0 : T - 1]);
      if (lstm) c_n.push_back(c_last);
    }
    // Step t's output: the directions' hidden states side by side.
    std::vector<OperandHandle> steps;
    for (int64_t t = 0; t < T; ++t) {
      std::vector<OperandHandle> per_dir;
      for (int64_t d = 0; d < dirs; ++d) per_dir.push_back(outs[d][t]);
      steps.push_back(concat(cx, per_dir, 1));
    }
    const bool last = l + 1 == s.layers;
    if (last && !node->output(0)->hasUses()) break;
    OperandHandle y = concat(cx, steps, s.batch_first ? 1 : 0);  // (T * B, F) or (B, T * F)
    const int64_t F = dirs * s.hidden;
    if (last) {
      reshape(cx, y, s.batch_first ? Shape{B, T, F} : Shape{T, B, F}, node->output(0));
    } else {
      seq = s.batch_first ? reshape(cx, y, {B * T, F}) : y;
    }
  }
  // h_n and c_n: (layers * directions, B, H).
  auto final_state = [&](const std::vector<OperandHandle>& parts, const Value* out) {
    if (!out->hasUses()) return;
    reshape(cx, concat(cx, parts, 0), {s.layers * dirs, B, s.hidden}, out);
  };
  final_state(h_n, node->output(1));
  if (lstm) final_state(c_n, node->output(2));
}

}  // namespace

// The weights of aten::quantized_lstm's CellParamsBase objects (one per
// layer and direction; quantize_dynamic's "quantized_dynamic" cells:
// biases b_ih, b_hh as float tensors, weights w_ih, w_hh packed), in
// aten::lstm's order: w_ih, w_hh (, b_ih, b_hh) each, the weights dequantized.
std::vector<at::Tensor> quantized_lstm_params(LoweringContext& cx, const Node* node) {
  const std::string what = "aten::quantized_lstm";
  std::vector<c10::IValue> cells;
  if (cx.has_constant(node->input(2))) {
    const c10::IValue& list = cx.constant(node->input(2)).value;
    check(list.isList(), "aten::quantized_lstm needs its parameters as a list");
    for (const c10::IValue& v : list.toListRef()) cells.push_back(v);
  } else {
    check(cx.has_sequence(node->input(2)), "aten::quantized_lstm needs constant parameters");
    for (const Value* v : cx.sequence(node->input(2))) cells.push_back(cx.constant(v).value);
  }
  const bool has_biases = cx.constant_bool(node->input(3));
  std::vector<at::Tensor> out;
  for (const c10::IValue& cell : cells) {
    c10::IValue state = packed_state(cell);
    // (kind, tensors, doubles, longs, packed weights)
    std::vector<c10::IValue> t = state.toTupleRef().elements().vec();
    if (t.size() == 2 && t[0].isTuple()) t = t[0].toTupleRef().elements().vec();
    check(t.size() == 5 && t[0].isString(), "aten::quantized_lstm has malformed cell parameters");
    const std::string kind = t[0].toStringRef();
    check(kind == "quantized_dynamic", [&] {
      return "aten::quantized_lstm with " + kind +
             " cells is not supported (only quantize_dynamic's 8-bit cells)";
    });
    const std::vector<at::Tensor> biases = t[1].toTensorVector();
    const c10::List<c10::IValue> packed = t[4].toList();
    check(packed.size() == 2, "aten::quantized_lstm cell parameters need two packed weights");
    auto [w_ih, b_ih] = dequantized_linear_params(packed.get(0), what);
    auto [w_hh, b_hh] = dequantized_linear_params(packed.get(1), what);
    // The cell keeps the biases beside the packed weights.
    if (biases.size() == 2) {
      b_ih = biases[0].to(at::kFloat);
      b_hh = biases[1].to(at::kFloat);
    }
    out.insert(out.end(), {w_ih, w_hh});
    if (has_biases) out.insert(out.end(), {b_ih, b_hh});
  }
  return out;
}

void register_recurrent_ops(LoweringTable& t) {
  t.add("aten::lstm", [](LoweringContext& cx, const Node* n) { lower_rnn(cx, n, Cell::Lstm); })
      .with_note(
          "unrolled per time step (FULLY_CONNECTED, SPLIT, LOGISTIC, TANH, MUL, ADD, "
          "CONCATENATION); fixed sizes, no proj_size, no packed sequences");
  t.add("aten::quantized_lstm", [](LoweringContext& cx, const Node* n) {
    const std::vector<at::Tensor> params = quantized_lstm_params(cx, n);
    lower_rnn(cx, n, Cell::Lstm, &params);
  });
  t.add("aten::rnn_tanh",
        [](LoweringContext& cx, const Node* n) { lower_rnn(cx, n, Cell::RnnTanh); })
      .with_note(
          "nn.RNN (tanh): unrolled per time step (FULLY_CONNECTED, ADD, TANH, CONCATENATION); "
          "fixed sizes, no packed sequences");
  t.add("aten::rnn_relu", [](LoweringContext& cx, const Node* n) {
     lower_rnn(cx, n, Cell::RnnRelu);
   }).with_note("nn.RNN (relu): as aten::rnn_tanh with RELU");
  t.add("aten::gru", [](LoweringContext& cx, const Node* n) { lower_rnn(cx, n, Cell::Gru); })
      .with_note(
          "unrolled per time step (FULLY_CONNECTED, SPLIT, LOGISTIC, TANH, MUL, ADD, SUB, "
          "CONCATENATION); fixed sizes, no packed sequences");
}

}  // namespace nnapi_convert
