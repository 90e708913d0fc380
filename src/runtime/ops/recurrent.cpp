// The recurrent operations (LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM,
// BIDIRECTIONAL_SEQUENCE_LSTM, RNN, UNIDIRECTIONAL_SEQUENCE_RNN,
// BIDIRECTIONAL_SEQUENCE_RNN, SVDF, QUANTIZED_16BIT_LSTM), as
// NeuralNetworks.h (feature level <= 3) and Android's reference CPU
// implementation define them, in float32 (FLOAT16 operands are widened and
// their results rounded back, as Android's reference LSTMEvalFloat16 does;
// QUANTIZED_16BIT_LSTM, below, in integers and double):
//
// LSTM (one step) and UNIDIRECTIONAL_SEQUENCE_LSTM (one step per time step)
// share one cell. With gates i (input), f (forget), g (cell), o (output):
//   gate_k = W_xk x + W_hk h_{t-1} [+ P_k . c_{t-1}]   (peephole: i, f)
//   gate_k = layer_norm ? LN(gate_k) * L_k + b_k : gate_k + b_k
//     (LN: (v - mean(v)) / sqrt(variance(v) + 1e-8) over the units)
//   f = sigmoid(gate_f); i = CIFG ? 1 - f : sigmoid(gate_i)
//   c_t = f . c_{t-1} + i . act(gate_g), clipped to [-cell_clip, cell_clip]
//         when cell_clip > 0
//   o = sigmoid(gate_o computed with P_o . c_t)
//   m = o . act(c_t)
//   h_t = projection ? clip(W_proj m + b_proj, proj_clip) : m
// where act is the operation's activation (0 none, 1 RELU, 2 RELU1, 3 RELU6,
// 4 TANH, 6 SIGMOID). CIFG = the input gate's weights are omitted; peephole
// = the cell-to-output weights are present; layer normalization = the
// output gate's layer-norm weights are present.
#include <cmath>

#include "../kernel.h"

namespace nnrt {
namespace {

// The LSTM family's activation codes (NeuralNetworks.h's LSTM:
// fused_activation_function).
at::Tensor activate(const at::Tensor& x, int32_t code) {
  switch (code) {
    case 0:
      return x;
    case 1:
      return at::clamp_min(x, 0);
    case 2:
      return at::clamp(x, -1, 1);
    case 3:
      return at::clamp(x, 0, 6);
    case 4:
      return at::tanh(x);
    case 6:
      return at::sigmoid(x);
    default:
      fail(Result::BadData, "unsupported recurrent activation " + std::to_string(code));
  }
}

// Where one direction's LSTM weights sit among the operation's inputs: four
// consecutive operands (gates i, f, g, o) from `input_weights` and from
// `recurrent_weights`, three peepholes (i, f, o), four biases, the
// projection weights and bias, and four layer-norm weights (0 = none).
struct LstmLayout {
  size_t input_weights, recurrent_weights, peephole, bias, projection, projection_bias;
  size_t layer_norm;
};

struct LstmParams {
  at::Tensor wx[4], wh[4], peephole[3], bias[4], layer_norm[4];
  at::Tensor wa[4];  // auxiliary-input weights (BIDIRECTIONAL_SEQUENCE_LSTM's cross linking)
  at::Tensor projection, projection_bias;
  int32_t activation = 4;
  double cell_clip = 0, proj_clip = 0;
  bool cifg = false, use_peephole = false, use_layer_norm = false;
};

at::Tensor optional_input(const ExecContext& ctx, size_t i) {
  return ctx.has(i) ? ctx.in(i).t.to(at::kFloat) : at::Tensor();
}

LstmParams read_lstm(const ExecContext& ctx, const LstmLayout& at, size_t activation) {
  LstmParams p;
  for (size_t k = 0; k < 4; ++k) {
    p.wx[k] = optional_input(ctx, at.input_weights + k);
    p.wh[k] = optional_input(ctx, at.recurrent_weights + k);
    p.bias[k] = optional_input(ctx, at.bias + k);
    if (at.layer_norm) p.layer_norm[k] = optional_input(ctx, at.layer_norm + k);
  }
  for (size_t k = 0; k < 3; ++k) p.peephole[k] = optional_input(ctx, at.peephole + k);
  p.projection = optional_input(ctx, at.projection);
  p.projection_bias = optional_input(ctx, at.projection_bias);
  p.cifg = !p.wx[0].defined();
  p.use_peephole = p.peephole[2].defined();
  p.use_layer_norm = p.layer_norm[3].defined();
  p.activation = ctx.i32(activation);
  p.cell_clip = ctx.f32(activation + 1);
  p.proj_clip = ctx.f32(activation + 2);
  for (size_t k = p.cifg ? 1 : 0; k < 4; ++k)
    if (!p.wx[k].defined() || !p.wh[k].defined() || !p.bias[k].defined() ||
        (p.use_layer_norm && !p.layer_norm[k].defined()))
      fail(Result::BadData, "an LSTM gate's weights, bias or layer-norm weights are missing");
  if (p.use_peephole && (!p.peephole[1].defined() || (!p.cifg && !p.peephole[0].defined())))
    fail(Result::BadData, "the LSTM's peephole weights are not all present");
  return p;
}

struct LstmState {
  at::Tensor h, c;  // [batch, output_size], [batch, num_units]
};

// One step of the cell on x [batch, input_size] (and the auxiliary input
// `aux` when the cell has auxiliary weights); updates `s` and returns the
// activated gates [batch, 4 or 3 (CIFG) * num_units] (the scratch buffer).
at::Tensor lstm_step(const LstmParams& p, const at::Tensor& x, LstmState& s,
                     const at::Tensor& aux = at::Tensor()) {
  auto gate = [&](size_t k, const at::Tensor& peep_state) {
    at::Tensor v = at::matmul(x, p.wx[k].t()) + at::matmul(s.h, p.wh[k].t());
    if (p.wa[k].defined()) v = v + at::matmul(aux, p.wa[k].t());
    if (p.use_peephole && k != 2) v = v + p.peephole[k == 3 ? 2 : k] * peep_state;
    if (!p.use_layer_norm) return v + p.bias[k];
    at::Tensor mean = v.mean(-1, true);
    at::Tensor centered = v - mean;
    at::Tensor variance = (centered * centered).mean(-1, true);
    return centered / at::sqrt(variance + 1e-8) * p.layer_norm[k] + p.bias[k];
  };
  at::Tensor f = at::sigmoid(gate(1, s.c));
  at::Tensor i = p.cifg ? 1 - f : at::sigmoid(gate(0, s.c));
  at::Tensor g = activate(gate(2, at::Tensor()), p.activation);
  at::Tensor c = f * s.c + i * g;
  if (p.cell_clip > 0) c = at::clamp(c, -p.cell_clip, p.cell_clip);
  at::Tensor o = at::sigmoid(gate(3, c));
  at::Tensor h = o * activate(c, p.activation);
  if (p.projection.defined()) {
    h = at::matmul(h, p.projection.t());
    if (p.projection_bias.defined()) h = h + p.projection_bias;
    if (p.proj_clip > 0) h = at::clamp(h, -p.proj_clip, p.proj_clip);
  }
  s = {h, c};
  return p.cifg ? at::cat({f, g, o}, 1) : at::cat({i, f, g, o}, 1);
}

// Inputs 1-17 and 20-22 of LSTM and UNIDIRECTIONAL_SEQUENCE_LSTM.
LstmLayout single_direction_layout(size_t layer_norm) { return {1, 5, 9, 12, 16, 17, layer_norm}; }

// LSTM (level 1; layer normalization, inputs 23-26, since level 3): input
// [batch, input_size], states in at 18 (output) and 19 (cell). Outputs:
// scratch buffer, output state, cell state, output.
void execute_lstm(ExecContext& ctx) {
  const LstmParams p = read_lstm(ctx, single_direction_layout(ctx.num_inputs() > 23 ? 23 : 0), 20);
  LstmState s{ctx.in(18).t.to(at::kFloat), ctx.in(19).t.to(at::kFloat)};
  at::Tensor scratch = lstm_step(p, ctx.in(0).t.to(at::kFloat), s);
  ctx.set_output(0, scratch);
  ctx.set_output(1, s.h);
  ctx.set_output(2, s.c);
  ctx.set_output(3, s.h.clone());
}

// Runs the cell over x [max_time, batch, input_size] from state `s`;
// returns the outputs [max_time, batch, output_size] (time steps in reverse
// order when `reverse`, each output at its own step's index).
at::Tensor lstm_sequence(const LstmParams& p, const at::Tensor& x, LstmState& s, bool reverse,
                         const at::Tensor& aux = at::Tensor()) {
  const int64_t steps = x.size(0);
  std::vector<at::Tensor> out(static_cast<size_t>(steps));
  for (int64_t k = 0; k < steps; ++k) {
    const int64_t t = reverse ? steps - 1 - k : k;
    lstm_step(p, x[t], s, aux.defined() ? aux[t] : at::Tensor());
    out[static_cast<size_t>(t)] = s.h;
  }
  if (steps == 0) return at::empty({0, x.size(1), s.h.size(1)}, at::kFloat);
  return at::stack(out);
}

// UNIDIRECTIONAL_SEQUENCE_LSTM (level 3): input [max_time, batch,
// input_size] when time_major (input 23), else [batch, max_time,
// input_size]; layer normalization at 24-27. One output: the output at
// every time step, in the input's layout.
void execute_unidirectional_sequence_lstm(ExecContext& ctx) {
  const LstmParams p = read_lstm(ctx, single_direction_layout(24), 20);
  const bool time_major = ctx.flag(23);
  at::Tensor x = ctx.in(0).t.to(at::kFloat);
  if (x.dim() != 3) fail(Result::BadData, "the input must have rank 3");
  if (!time_major) x = x.transpose(0, 1);
  LstmState s{ctx.in(18).t.to(at::kFloat), ctx.in(19).t.to(at::kFloat)};
  at::Tensor y = lstm_sequence(p, x, s, false);
  ctx.set_output(0, time_major ? y : y.transpose(0, 1).contiguous());
}

// Both directions' outputs [max_time, batch, units] in the input's layout:
// output 0 and 1, or, merged, output 0 with them side by side.
void set_bidirectional_outputs(ExecContext& ctx, const at::Tensor& fw, const at::Tensor& bw,
                               bool time_major, bool merge) {
  auto layout = [&](const at::Tensor& y) {
    return time_major ? y.contiguous() : y.transpose(0, 1).contiguous();
  };
  if (merge) {
    ctx.set_output(0, layout(at::cat({fw, bw}, 2)));
  } else {
    ctx.set_output(0, layout(fw));
    ctx.set_output(1, layout(bw));
  }
}

// A rank-3 sequence input made time-major.
at::Tensor time_major_input(const ExecContext& ctx, size_t i, bool time_major) {
  at::Tensor t = ctx.in(i).t.to(at::kFloat);
  if (t.dim() != 3) fail(Result::BadData, "the input must have rank 3");
  return time_major ? t : t.transpose(0, 1);
}

// BIDIRECTIONAL_SEQUENCE_LSTM (level 3): input (0); the forward cell's
// inputs 1-17 of LSTM at 1-17, the backward cell's at 18-34; states: forward
// output and cell (35, 36), backward (37, 38); auxiliary input (39) and
// forward/backward auxiliary weights for gates i, f, g, o (40-43, 44-47);
// activation, cell clip, projection clip (48-50); merge_outputs (BOOL, 51);
// time_major (BOOL, 52); layer-norm weights forward (53-56) and backward
// (57-60). Linking as BIDIRECTIONAL_SEQUENCE_RNN's: no auxiliary input; the
// auxiliary input alone (the backward cell reads it); or with the auxiliary
// weights (each gate adds W_aux aux_t).
void execute_bidirectional_sequence_lstm(ExecContext& ctx) {
  const bool time_major = ctx.flag(52), merge = ctx.flag(51);
  LstmParams fw_p = read_lstm(ctx, {1, 5, 9, 12, 16, 17, 53}, 48);
  LstmParams bw_p = read_lstm(ctx, {18, 22, 26, 29, 33, 34, 57}, 48);
  const bool aux = ctx.has(39);
  bool cross = false;
  for (size_t k = 0; k < 8; ++k) cross = cross || ctx.has(40 + k);
  if (cross && !aux) fail(Result::BadData, "auxiliary weights without an auxiliary input");
  if (cross) {
    for (size_t k = 0; k < 4; ++k) {
      fw_p.wa[k] = optional_input(ctx, 40 + k);
      bw_p.wa[k] = optional_input(ctx, 44 + k);
      if ((!fw_p.cifg || k) && !fw_p.wa[k].defined())
        fail(Result::BadData, "an auxiliary weight is omitted");
      if ((!bw_p.cifg || k) && !bw_p.wa[k].defined())
        fail(Result::BadData, "an auxiliary weight is omitted");
    }
  }
  const at::Tensor x = time_major_input(ctx, 0, time_major);
  const at::Tensor x_aux = aux ? time_major_input(ctx, 39, time_major) : at::Tensor();
  LstmState fw_s{ctx.in(35).t.to(at::kFloat), ctx.in(36).t.to(at::kFloat)};
  LstmState bw_s{ctx.in(37).t.to(at::kFloat), ctx.in(38).t.to(at::kFloat)};
  const at::Tensor fw = lstm_sequence(fw_p, x, fw_s, false, cross ? x_aux : at::Tensor());
  const at::Tensor bw = aux && !cross ? lstm_sequence(bw_p, x_aux, bw_s, true)
                                      : lstm_sequence(bw_p, x, bw_s, true, x_aux);
  set_bidirectional_outputs(ctx, fw, bw, time_major, merge);
}

// The basic RNN cell (RNN, UNIDIRECTIONAL_SEQUENCE_RNN):
//   h_t = act(W x_t + R h_{t-1} + b), act a FuseCode (none, RELU, RELU1, RELU6).
at::Tensor rnn_step(const at::Tensor& x, const at::Tensor& h, const at::Tensor& w,
                    const at::Tensor& r, const at::Tensor& b, int32_t fuse) {
  check_fuse_code(fuse);
  return activate(at::matmul(x, w.t()) + at::matmul(h, r.t()) + b, fuse);
}

// RNN (level 1): input [batch, input_size], weights [num_units, input_size],
// recurrent weights [num_units, num_units], bias [num_units], hidden state
// in [batch, num_units], activation. Outputs: hidden state out, output
// (equal).
void execute_rnn(ExecContext& ctx) {
  at::Tensor h =
      rnn_step(ctx.in(0).t.to(at::kFloat), ctx.in(4).t.to(at::kFloat), ctx.in(1).t.to(at::kFloat),
               ctx.in(2).t.to(at::kFloat), ctx.in(3).t.to(at::kFloat), ctx.i32(5));
  ctx.set_output(0, h);
  ctx.set_output(1, h.clone());
}

// UNIDIRECTIONAL_SEQUENCE_RNN (level 3): RNN's inputs with input [max_time,
// batch, input_size] when time_major (INT32 input 6 not 0), else [batch,
// max_time, input_size]. Output: the hidden state at every step, in the
// input's layout.
void execute_unidirectional_sequence_rnn(ExecContext& ctx) {
  at::Tensor x = ctx.in(0).t.to(at::kFloat);
  if (x.dim() != 3) fail(Result::BadData, "the input must have rank 3");
  const bool time_major = ctx.i32(6) != 0;
  if (!time_major) x = x.transpose(0, 1);
  const at::Tensor w = ctx.in(1).t.to(at::kFloat), r = ctx.in(2).t.to(at::kFloat);
  const at::Tensor b = ctx.in(3).t.to(at::kFloat);
  const int32_t fuse = ctx.i32(5);
  at::Tensor h = ctx.in(4).t.to(at::kFloat);
  std::vector<at::Tensor> out;
  for (int64_t t = 0; t < x.size(0); ++t) {
    h = rnn_step(x[t], h, w, r, b, fuse);
    out.push_back(h);
  }
  at::Tensor y = out.empty() ? at::empty({0, x.size(1), w.size(0)}, at::kFloat) : at::stack(out);
  ctx.set_output(0, time_major ? y : y.transpose(0, 1).contiguous());
}

// BIDIRECTIONAL_SEQUENCE_RNN (level 3): input (0), forward weights,
// recurrent weights, bias, hidden state (1-4), the backward ones (5-8), an
// auxiliary input (9) and forward/backward auxiliary weights (10, 11), the
// activation (12), time_major (BOOL, 13), merge_outputs (BOOL, 14). With no
// auxiliary operand both directions read the input; with the auxiliary input
// alone (parallel linking) the backward direction reads it instead; with all
// three (cross linking) each step adds aux_weights * aux_input. Outputs: the
// forward and backward outputs [max_time, batch, units] (in the input's
// layout), or one output with both concatenated on the last axis when merged.
void execute_bidirectional_sequence_rnn(ExecContext& ctx) {
  const bool time_major = ctx.flag(13), merge = ctx.flag(14);
  const int32_t fuse = ctx.i32(12);
  const at::Tensor x = time_major_input(ctx, 0, time_major);
  const bool aux = ctx.has(9), cross = aux && ctx.has(10) && ctx.has(11);
  if (!aux && (ctx.has(10) || ctx.has(11)))
    fail(Result::BadData, "auxiliary weights without an auxiliary input");
  if (aux && !cross && (ctx.has(10) || ctx.has(11)))
    fail(Result::BadData, "one of the two auxiliary weights is omitted");
  const at::Tensor x_aux = aux ? time_major_input(ctx, 9, time_major) : at::Tensor();
  auto direction = [&](size_t first, const at::Tensor& input, const at::Tensor& aux_weights,
                       bool reverse) {
    const at::Tensor w = ctx.in(first).t.to(at::kFloat), r = ctx.in(first + 1).t.to(at::kFloat);
    const at::Tensor b = ctx.in(first + 2).t.to(at::kFloat);
    at::Tensor h = ctx.in(first + 3).t.to(at::kFloat);
    const int64_t steps = input.size(0);
    std::vector<at::Tensor> out(static_cast<size_t>(steps));
    for (int64_t k = 0; k < steps; ++k) {
      const int64_t t = reverse ? steps - 1 - k : k;
      at::Tensor bias = b;
      if (aux_weights.defined()) bias = b + at::matmul(x_aux[t], aux_weights.t());
      h = rnn_step(input[t], h, w, r, bias, fuse);
      out[static_cast<size_t>(t)] = h;
    }
    return steps ? at::stack(out) : at::empty({0, input.size(1), w.size(0)}, at::kFloat);
  };
  const at::Tensor fw_aux = cross ? ctx.in(10).t.to(at::kFloat) : at::Tensor();
  const at::Tensor bw_aux = cross ? ctx.in(11).t.to(at::kFloat) : at::Tensor();
  at::Tensor fw = direction(1, x, fw_aux, false);
  at::Tensor bw = direction(5, aux && !cross ? x_aux : x, bw_aux, true);
  set_bidirectional_outputs(ctx, fw, bw, time_major, merge);
}

// SVDF (level 1; TENSOR_FLOAT16 since level 3): input [batch, input_size],
// weights_feature [num_filters, input_size], weights_time [num_filters,
// memory_size], bias [num_units] (optional), state_in [batch, num_filters *
// memory_size], rank (INT32), FuseCode; num_filters = num_units * rank.
// Outputs: state_out (state_in's shape), output [batch, num_units].
// NeuralNetworks.h gives the state as [batch, (memory_size - 1) * num_units *
// rank]; Android's reference implementation (SVDF.cpp) and its conformance
// tests use memory_size * num_filters, filter-major: state[b, f * memory_size
// + m], the oldest step at m = 0. One step:
//   state[b, f, memory_size - 1] = weights_feature[f] . x[b]
//   scratch[b, f] = sum_m weights_time[f, m] * state[b, f, m]
//   output[b, u] = act(bias[u] + sum_r scratch[b, u * rank + r])
//   state_out[b, f, m] = state[b, f, m + 1], and 0 at m = memory_size - 1.
void execute_svdf(ExecContext& ctx) {
  const at::Tensor x = ctx.in(0).t.to(at::kFloat);
  const at::Tensor weights_feature = ctx.in(1).t.to(at::kFloat);
  const at::Tensor weights_time = ctx.in(2).t.to(at::kFloat);
  const int32_t rank = ctx.i32(5), fuse = ctx.i32(6);
  check_fuse_code(fuse);
  const int64_t batch = x.size(0), filters = weights_feature.size(0);
  const int64_t memory = weights_time.size(1);
  if (rank <= 0 || filters % rank != 0)
    fail(Result::BadData, "the SVDF rank must be positive and divide weights_feature's dim 0");
  at::Tensor state = ctx.in(4).t.to(at::kFloat).reshape({batch, filters, memory}).clone();
  state.select(2, memory - 1).copy_(at::matmul(x, weights_feature.t()));
  const at::Tensor scratch = (state * weights_time).sum(2);
  at::Tensor out = scratch.reshape({batch, filters / rank, rank}).sum(2);
  if (ctx.has(3)) out = out + ctx.in(3).t.to(at::kFloat);
  at::Tensor shifted = at::zeros_like(state);
  shifted.narrow(2, 0, memory - 1).copy_(state.narrow(2, 1, memory - 1));
  ctx.set_output(0, shifted.reshape({batch, filters * memory}));
  ctx.set_output(1, activate(out, fuse));
}

// QUANTIZED_16BIT_LSTM (level 3): input [batch, input_size] (QUANT8_ASYMM,
// scale 1/128, zero point 128); input-to-{input, forget, cell, output}
// weights [output_size, input_size] (1-4) and recurrent-to-{...} weights
// [output_size, output_size] (5-8), QUANT8_ASYMM sharing one scale and zero
// point; gate biases [output_size] (9-12, TENSOR_INT32, scale weights_scale /
// 128); previous cell state [batch, output_size] (13, QUANT16_SYMM, scale
// 2^-11) and previous output [batch, output_size] (14, QUANT8_ASYMM, 1/128,
// 128). Outputs: cell state out (QUANT16_SYMM, 2^-11), output (QUANT8_ASYMM,
// 1/128, 128).
//
// As Android's reference (QuantizedLSTM.cpp) computes it: each gate's int32
// accumulator bias + sum_d (v[d] - 128) * (w[d] - weights_zero_point) over
// v = [input, previous output] and the gate's weights laid out as
// [recurrent weights | input weights] (the order Android's reference and its
// conformance test quantized_lstm.mod.py use; when input_size differs from
// output_size this is not W_x x + W_h h), rescaled to 16-bit fixed point with
// 12 fractional bits (saturated); then
//   i = sigmoid, f = sigmoid, g = tanh, o = sigmoid of the gates,
//   c = f * c_prev + i * g, stored with 11 fractional bits (saturated),
//   output = o * tanh(c clamped to [-8, 8]), stored as 128 + round(128 *
//   output) in [0, 255].
// The reference evaluates sigmoid, tanh and the products in gemmlowp's 16-bit
// fixed point; this kernel evaluates them in double, which NNAPI allows
// within one quantum (Android's conformance example matches to one quantum of
// the cell state, exactly on the output).
void execute_quantized_16bit_lstm(ExecContext& ctx) {
  const Value& w0 = ctx.in(1);
  const at::Tensor v = at::cat({ctx.in(0).t, ctx.in(14).t}, 1).to(at::kDouble) - 128;
  const double fc_scale = 4096.0 * static_cast<double>(ctx.in(9).scale);
  auto gate = [&](size_t k) {
    const at::Tensor w = at::cat({ctx.in(5 + k).t, ctx.in(1 + k).t}, 1).to(at::kDouble) -
                         static_cast<double>(w0.zero_point);
    const at::Tensor acc = at::matmul(v, w.t()) + ctx.in(9 + k).t.to(at::kDouble);
    return at::clamp(at::round(acc * fc_scale), -32768, 32767) / 4096.0;
  };
  const at::Tensor i = at::sigmoid(gate(0)), f = at::sigmoid(gate(1));
  const at::Tensor g = at::tanh(gate(2)), o = at::sigmoid(gate(3));
  const at::Tensor c_prev = ctx.in(13).t.to(at::kDouble) / 2048.0;
  const at::Tensor c_raw = at::clamp(at::round((f * c_prev + i * g) * 2048.0), -32768, 32767);
  const at::Tensor h = o * at::tanh(at::clamp(c_raw / 2048.0, -8, 8));
  ctx.set_output(0, c_raw.to(at::kShort));
  ctx.set_output(1, (at::clamp(at::round(h * 128.0), -128, 127) + 128).to(at::kByte));
}

}  // namespace

void add_recurrent_kernels(std::vector<OpKernel>& table) {
  table.push_back({Op::BidirectionalSequenceLstm, "BIDIRECTIONAL_SEQUENCE_LSTM",
                   execute_bidirectional_sequence_lstm});
  table.push_back({Op::BidirectionalSequenceRnn, "BIDIRECTIONAL_SEQUENCE_RNN",
                   execute_bidirectional_sequence_rnn});
  table.push_back({Op::Rnn, "RNN", execute_rnn});
  table.push_back({Op::UnidirectionalSequenceRnn, "UNIDIRECTIONAL_SEQUENCE_RNN",
                   execute_unidirectional_sequence_rnn});
  table.push_back({Op::Lstm, "LSTM", execute_lstm});
  table.push_back({Op::Svdf, "SVDF", execute_svdf});
  table.push_back({Op::Quantized16BitLstm, "QUANTIZED_16BIT_LSTM", execute_quantized_16bit_lstm});
  table.push_back({Op::UnidirectionalSequenceLstm, "UNIDIRECTIONAL_SEQUENCE_LSTM",
                   execute_unidirectional_sequence_lstm});
}

}  // namespace nnrt
