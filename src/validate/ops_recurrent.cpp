// Rules of NeuralNetworks.h for the recurrent operations: LSTM (level 1;
// TENSOR_FLOAT16 and layer normalization since level 3),
// UNIDIRECTIONAL_SEQUENCE_LSTM (level 3), RNN (level 1) and
// UNIDIRECTIONAL_SEQUENCE_RNN and BIDIRECTIONAL_SEQUENCE_RNN (level 3; see
// their rules below), SVDF (level 1) and QUANTIZED_16BIT_LSTM (level 3),
// as Android's reference implementation checks them (LSTM.cpp, UnidirectionalSequenceLSTM.cpp).
//
// Both take, from input 1 on: input-to-{input, forget, cell, output} weights
// [num_units, input_size] (1-4), recurrent-to-{...} weights [num_units,
// output_size] (5-8), cell-to-{input, forget, output} peephole weights
// [num_units] (9-11), {input, forget, cell, output} gate biases [num_units]
// (12-15), projection weights [output_size, num_units] (16) and bias
// [output_size] (17), output state in [batch, output_size] (18), cell state
// in [batch, num_units] (19), activation (INT32, 20), cell clip and
// projection clip (FLOAT32, or FLOAT16 for TENSOR_FLOAT16; >= 0; 21, 22),
// and four layer-norm weights [num_units]. Optional operands (omitted):
// the input gate's (1, 5, 12: CIFG, all or none), the peepholes (all or
// none; 9 omitted with CIFG), the projection, the layer-norm weights (all or
// none; the input gate's omitted with CIFG).
#include <string>

#include "validate/rule_context.h"

namespace nnapi_validate {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

// The sizes an LSTM's operands agree on (-1 = unknown).
struct LstmDims {
  int64_t batch = -1, input_size = -1, num_units = -1, output_size = -1;
  bool cifg = false;
};

void present(const Check& c, size_t i, const char* what) {
  if (c.omitted(i))
    c.fail(Rule::Parameter, "input " + str(static_cast<int64_t>(i)) + " (" + what +
                                ") is omitted; NNAPI's " + c.name() + " needs it");
}

// A tensor input of rank `rank` whose dims, where known, are `want` (-1 =
// any); skipped when omitted.
void tensor_dims(const Check& c, size_t i, const char* what, std::initializer_list<int64_t> want) {
  if (c.omitted(i)) return;
  c.input_rank(i, want.size(), want.size());
  if (!c.shapes()) return;
  size_t k = 0;
  for (int64_t w : want) {
    c.equal_dims(c.dim(i, k), w,
                 "input " + str(static_cast<int64_t>(i)) + " (" + what + ") has dim " +
                     str(static_cast<int64_t>(k)) + " unlike the operation's other operands");
    ++k;
  }
}

// Operands `first`..`first + count - 1` all present or all omitted (the
// first skipped when `skip_first`).
void all_or_none(const Check& c, size_t first, size_t count, bool skip_first, const char* what) {
  size_t n = 0, total = 0;
  for (size_t k = skip_first ? 1 : 0; k < count; ++k, ++total) n += c.omitted(first + k) ? 0 : 1;
  if (n != 0 && n != total)
    c.fail(Rule::Parameter, std::string("the ") + what + " (inputs " +
                                str(static_cast<int64_t>(first + (skip_first ? 1 : 0))) + " to " +
                                str(static_cast<int64_t>(first + count - 1)) +
                                ") are partly omitted; NNAPI's " + c.name() +
                                " takes all of them or none");
}

// Where one direction's operands are: its inputs 1-17 of LSTM shifted by
// `off` (BIDIRECTIONAL_SEQUENCE_LSTM's backward weights are 17 further), its
// output and cell states, the activation (then the two clips), and the four
// layer-norm weights (0 = the operation has none).
struct LstmAt {
  size_t off, h, cell, act, layer_norm;
};

std::string in_name(size_t i) { return "input " + str(static_cast<int64_t>(i)); }

// The types and optional-operand rules of one direction's operands, then,
// with shapes, their dims against `d` (batch and input_size set by the
// caller).
void lstm_operands(Check& c, const LstmAt& at, LstmDims& d) {
  const T tensor = c.type(0);
  const size_t o1 = at.off;  // input i of LSTM is o1 + i here, for i in 1..17
  for (size_t i = 1; i <= 17; ++i) c.input_type(o1 + i, {tensor});
  c.input_type(at.h, {tensor});
  c.input_type(at.cell, {tensor});
  if (at.layer_norm)
    for (size_t i = at.layer_norm; i < at.layer_norm + 4; ++i) c.input_type(i, {tensor});
  c.input_type(at.act, {T::Int32});
  float_scalar_for_input(c, at.act + 1);
  float_scalar_for_input(c, at.act + 2);
  static const char* kRequired[] = {"input-to-forget weights",     "input-to-cell weights",
                                    "input-to-output weights",     nullptr,
                                    "recurrent-to-forget weights", "recurrent-to-cell weights",
                                    "recurrent-to-output weights"};
  for (size_t i = 2; i <= 8; ++i)
    if (kRequired[i - 2]) present(c, o1 + i, kRequired[i - 2]);
  present(c, o1 + 13, "forget gate bias");
  present(c, o1 + 14, "cell gate bias");
  present(c, o1 + 15, "output gate bias");
  present(c, at.h, "output state in");
  present(c, at.cell, "cell state in");
  d.cifg = c.omitted(o1 + 1);
  if (c.omitted(o1 + 1) != c.omitted(o1 + 5) || c.omitted(o1 + 1) != c.omitted(o1 + 12))
    c.fail(Rule::Parameter, "the input gate's weights and bias (" + in_name(o1 + 1) + ", " +
                                in_name(o1 + 5) + " and " + in_name(o1 + 12) +
                                ") are partly omitted; NNAPI's " + std::string(c.name()) +
                                " takes all of them, or none (CIFG)");
  all_or_none(c, o1 + 9, 3, d.cifg, "peephole weights");
  if (d.cifg && !c.omitted(o1 + 9))
    c.fail(Rule::Parameter, in_name(o1 + 9) +
                                " (cell-to-input weights) is present while the input gate is "
                                "omitted (CIFG)");
  if (!c.omitted(o1 + 17) && c.omitted(o1 + 16))
    c.fail(Rule::Parameter,
           in_name(o1 + 17) + " (projection bias) is present without projection weights");
  if (at.layer_norm) {
    all_or_none(c, at.layer_norm, 4, d.cifg, "layer normalization weights");
    if (d.cifg && !c.omitted(at.layer_norm))
      c.fail(Rule::Parameter, in_name(at.layer_norm) +
                                  " (input layer-norm weights) is present while the input gate "
                                  "is omitted (CIFG)");
  }
  if (!c.full()) return;
  if (auto a = c.i32(at.act);
      a && !(*a == 0 || *a == 1 || *a == 2 || *a == 3 || *a == 4 || *a == 6))
    c.fail(Rule::Parameter, in_name(at.act) + " (activation) is " + str(*a) +
                                "; NNAPI's LSTM activations are 0 (none), 1 (RELU), 2 (RELU1), "
                                "3 (RELU6), 4 (TANH) and 6 (SIGMOID)");
  for (size_t i : {at.act + 1, at.act + 2})
    if (auto v = c.f32(i); v && !(*v >= 0))
      c.fail(Rule::Parameter, in_name(i) + " (" + (i == at.act + 1 ? "cell" : "projection") +
                                  " clip) is " + std::to_string(*v) +
                                  "; NNAPI needs it >= 0 (0 = no clipping)");
  if (!c.shapes()) return;
  d.num_units = c.dim(o1 + 4, 0);
  d.output_size = c.dim(o1 + 8, 1);
  if (d.num_units < 0) d.num_units = c.dim(o1 + 8, 0);
  const int64_t n = d.num_units, o = d.output_size, in = d.input_size;
  for (size_t i = 1; i <= 4; ++i) tensor_dims(c, o1 + i, "input weights", {n, in});
  for (size_t i = 5; i <= 8; ++i) tensor_dims(c, o1 + i, "recurrent weights", {n, o});
  for (size_t i = 9; i <= 15; ++i) tensor_dims(c, o1 + i, "peephole weights or gate bias", {n});
  tensor_dims(c, o1 + 16, "projection weights", {o, n});
  tensor_dims(c, o1 + 17, "projection bias", {o});
  tensor_dims(c, at.h, "output state in", {d.batch, o});
  tensor_dims(c, at.cell, "cell state in", {d.batch, n});
  if (at.layer_norm)
    for (size_t i = at.layer_norm; i < at.layer_norm + 4; ++i)
      tensor_dims(c, i, "layer normalization weights", {n});
  if (c.omitted(o1 + 16))
    c.equal_dims(n, o, "without projection, num_units and output_size differ");
}

// ---- LSTM: input [batch, input_size], 23 inputs (27 with layer
// normalization, since level 3). Outputs: scratch buffer [batch, num_units *
// (CIFG ? 3 : 4)], output state [batch, output_size], cell state [batch,
// num_units], output [batch, output_size].

void lstm_rule(Check& c) {
  c.input_count({23, 27});
  c.output_count(4);
  typed(c, {{T::TensorFloat32, 1}, {T::TensorFloat16, 3}});
  c.input_rank(0, 2, 2);
  if (c.n_in() == 27) c.needs_level(3, "LSTM with layer normalization");
  for (size_t o = 0; o < 4; ++o) {
    c.output_same_type(o, 0);
    c.output_rank(o, 2, 2);
  }
  LstmDims d;
  d.batch = c.dim(0, 0);
  d.input_size = c.dim(0, 1);
  lstm_operands(c, {0, 18, 19, 20, c.n_in() == 27 ? 23u : 0u}, d);
  if (!c.shapes()) return;
  const int64_t gates = d.num_units < 0 ? -1 : d.num_units * (d.cifg ? 3 : 4);
  c.set_output(0, Shape::of({d.batch, gates}));
  c.set_output(1, Shape::of({d.batch, d.output_size}));
  c.set_output(2, Shape::of({d.batch, d.num_units}));
  c.set_output(3, Shape::of({d.batch, d.output_size}));
}

// ---- UNIDIRECTIONAL_SEQUENCE_LSTM (level 3): input [max_time, batch,
// input_size] when time_major (BOOL, input 23), else [batch, max_time,
// input_size]; layer-norm weights at 24-27; 28 inputs. One output: the input's
// shape with output_size last.

void unidirectional_sequence_lstm_rule(Check& c) {
  c.input_count({28});
  c.output_count(1);
  typed(c, {{T::TensorFloat32, 3}, {T::TensorFloat16, 3}});
  c.input_rank(0, 3, 3);
  c.input_type(23, {T::Bool});
  c.output_same_type(0, 0);
  c.output_rank(0, 3, 3);
  LstmDims d;
  const Shape& x = c.shape(0);
  const auto time_major = c.flag(23);
  if (x.known && x.rank() == 3 && time_major) d.batch = x[*time_major ? 1 : 0];
  d.input_size = c.dim(0, 2);
  lstm_operands(c, {0, 18, 19, 20, 24}, d);
  if (!c.shapes() || !x.known) return;
  Shape out = x;
  out.d[2] = d.output_size;
  c.set_output(0, out);
}

// ---- RNN (level 1; TENSOR_FLOAT16 since level 3) and
// UNIDIRECTIONAL_SEQUENCE_RNN (level 3): input, weights [num_units,
// input_size], recurrent weights [num_units, num_units], bias [num_units],
// hidden state [batch, num_units], fused activation (FuseCode), and for the
// sequence op time_major (INT32, 0 or 1). RNN: input [batch, input_size],
// outputs hidden state out and output [batch, num_units]; the sequence op:
// input [max_time, batch, input_size] (time-major) or [batch, max_time,
// input_size], output the input's shape with num_units last.

void rnn_operands(Check& c, size_t input_rank) {
  c.input_rank(0, input_rank, input_rank);
  for (size_t i = 1; i <= 4; ++i) {
    c.input_type(i, {c.type(0)});
    present(c, i,
            i == 1   ? "weights"
            : i == 2 ? "recurrent weights"
            : i == 3 ? "bias"
                     : "hidden state");
  }
  c.input_type(5, {T::Int32});
  for (size_t o = 0; o < c.n_out(); ++o) {
    c.output_same_type(o, 0);
    c.output_rank(o, input_rank, input_rank);
  }
  if (!c.full()) return;
  c.fuse_code(5);
}

// The sizes of an RNN (-1 unknown): batch, input_size, num_units.
struct RnnDims {
  int64_t batch, input_size, units;
};

RnnDims rnn_dims(const Check& c, int64_t batch, int64_t input_size) {
  const int64_t n = c.dim(1, 0) >= 0 ? c.dim(1, 0) : c.dim(3, 0);
  tensor_dims(c, 1, "weights", {n, input_size});
  tensor_dims(c, 2, "recurrent weights", {n, n});
  tensor_dims(c, 3, "bias", {n});
  tensor_dims(c, 4, "hidden state", {batch, n});
  return {batch, input_size, n};
}

void rnn_rule(Check& c) {
  c.input_count({6});
  c.output_count(2);
  typed(c, {{T::TensorFloat32, 1}, {T::TensorFloat16, 3}});
  rnn_operands(c, 2);
  if (!c.shapes()) return;
  const RnnDims d = rnn_dims(c, c.dim(0, 0), c.dim(0, 1));
  c.set_output(0, Shape::of({d.batch, d.units}));
  c.set_output(1, Shape::of({d.batch, d.units}));
}

void unidirectional_sequence_rnn_rule(Check& c) {
  c.input_count({7});
  c.output_count(1);
  typed(c, {{T::TensorFloat32, 3}, {T::TensorFloat16, 3}});
  rnn_operands(c, 3);
  c.input_type(6, {T::Int32});
  if (!c.full()) return;
  const auto time_major = c.i32(6);
  if (time_major && *time_major != 0 && *time_major != 1)
    c.fail(Rule::Parameter, "input 6 (time_major) is " + str(*time_major) +
                                "; NNAPI's UNIDIRECTIONAL_SEQUENCE_RNN takes 0 or 1");
  if (!c.shapes()) return;
  const Shape& x = c.shape(0);
  const int64_t batch = x.known && time_major ? x[*time_major ? 1 : 0] : -1;
  const RnnDims d = rnn_dims(c, batch, c.dim(0, 2));
  if (!x.known) return;
  Shape out = x;
  out.d[2] = d.units;
  c.set_output(0, out);
}

// ---- The outputs of the bidirectional sequence operations at level 3: the
// forward and backward outputs, or one merged output (merge_outputs), each
// the input's shape with the direction's size last (their sum when merged).

void bidirectional_output_types(const Check& c) {
  if (c.n_out() != 1 && c.n_out() != 2)
    c.fail(Rule::OutputCount, "has " + str(static_cast<int64_t>(c.n_out())) +
                                  " outputs; at feature level 3 NNAPI's " + c.name() +
                                  " has 2 (or 1 with merge_outputs)");
  for (size_t o = 0; o < c.n_out(); ++o) {
    c.output_same_type(o, 0);
    c.output_rank(o, 3, 3);
  }
}

void merged_output_count(const Check& c, size_t merge_input) {
  const auto merge = c.flag(merge_input);
  if (merge && c.n_out() != (*merge ? 1u : 2u))
    c.fail(Rule::OutputCount, std::string("merge_outputs is ") + (*merge ? "true" : "false") +
                                  ", so NNAPI's " + c.name() + " has " +
                                  (*merge ? "1 output" : "2 outputs"));
}

void bidirectional_output_shapes(Check& c, int64_t fw, int64_t bw) {
  const Shape& x = c.shape(0);
  if (!x.known) return;
  Shape out = x;
  if (c.n_out() == 1) {
    out.d[2] = fw < 0 || bw < 0 ? -1 : fw + bw;
    c.set_output(0, out);
    return;
  }
  out.d[2] = fw;
  c.set_output(0, out);
  out.d[2] = bw;
  c.set_output(1, out);
}

// ---- BIDIRECTIONAL_SEQUENCE_RNN (level 3; the outputs with final states
// are level 4): 15 inputs (input; forward weights, recurrent weights, bias,
// hidden state; the backward ones; auxiliary input and forward/backward
// auxiliary weights, optional; activation; time_major and merge_outputs
// BOOL). Outputs: forward and backward outputs, or one merged output.

void bidirectional_sequence_rnn_rule(Check& c) {
  c.input_count({15});
  typed(c, {{T::TensorFloat32, 3}, {T::TensorFloat16, 3}});
  c.input_rank(0, 3, 3);
  for (size_t i = 1; i <= 11; ++i) c.input_type(i, {c.type(0)});
  for (size_t i : {1, 2, 3, 4, 5, 6, 7, 8})
    present(c, i,
            i % 4 == 1   ? "weights"
            : i % 4 == 2 ? "recurrent weights"
            : i % 4 == 3 ? "bias"
                         : "hidden state");
  c.input_type(12, {T::Int32});
  c.input_type(13, {T::Bool});
  c.input_type(14, {T::Bool});
  const bool aux = !c.omitted(9), fw_aux = !c.omitted(10), bw_aux = !c.omitted(11);
  if (fw_aux != bw_aux || (fw_aux && !aux))
    c.fail(Rule::Parameter,
           "the auxiliary operands (inputs 9 to 11) must be all omitted, the auxiliary input "
           "alone (parallel linking) or all present (cross linking)");
  if (aux) c.input_rank(9, 3, 3);
  bidirectional_output_types(c);
  if (!c.full()) return;
  c.fuse_code(12);
  merged_output_count(c, 14);
  if (!c.shapes()) return;
  const Shape& x = c.shape(0);
  const auto time_major = c.flag(13);
  const int64_t batch = x.known && time_major ? x[*time_major ? 1 : 0] : -1;
  const int64_t aux_size = aux ? c.dim(9, 2) : -1;
  int64_t units[2];
  for (size_t d = 0; d < 2; ++d) {
    const size_t first = 1 + 4 * d;
    // The backward direction reads the auxiliary input in parallel linking.
    const bool reads_aux = d == 1 && aux && !fw_aux;
    const int64_t in = reads_aux ? aux_size : c.dim(0, 2);
    const int64_t n = c.dim(first, 0) >= 0 ? c.dim(first, 0) : c.dim(first + 2, 0);
    tensor_dims(c, first, "weights", {n, in});
    tensor_dims(c, first + 1, "recurrent weights", {n, n});
    tensor_dims(c, first + 2, "bias", {n});
    tensor_dims(c, first + 3, "hidden state", {batch, n});
    tensor_dims(c, 10 + d, "auxiliary weights", {n, aux_size});
    units[d] = n;
  }
  if (aux) {
    c.equal_dims(c.dim(9, 0), c.dim(0, 0), "the auxiliary input and the input differ in dim 0");
    c.equal_dims(c.dim(9, 1), c.dim(0, 1), "the auxiliary input and the input differ in dim 1");
  }
  bidirectional_output_shapes(c, units[0], units[1]);
}

// ---- BIDIRECTIONAL_SEQUENCE_LSTM (level 3; the outputs with final states
// are level 4): 61 inputs (see the runtime's ops/recurrent.cpp for the
// layout): each direction's operands as LSTM's, an optional auxiliary input
// (39) with optional auxiliary weights (40-47, all or none, the input gates'
// omitted with CIFG), merge_outputs (51) and time_major (52) BOOL.

void bidirectional_sequence_lstm_rule(Check& c) {
  c.input_count({61});
  typed(c, {{T::TensorFloat32, 3}, {T::TensorFloat16, 3}});
  c.input_rank(0, 3, 3);
  c.input_type(51, {T::Bool});
  c.input_type(52, {T::Bool});
  for (size_t i = 39; i <= 47; ++i) c.input_type(i, {c.type(0)});
  bidirectional_output_types(c);
  const Shape& x = c.shape(0);
  const auto time_major = c.flag(52);
  const bool aux = !c.omitted(39);
  LstmDims dims[2];
  const LstmAt at[2] = {{0, 35, 36, 48, 53}, {17, 37, 38, 48, 57}};
  size_t aux_weights = 0;
  for (size_t i = 40; i <= 47; ++i) aux_weights += c.omitted(i) ? 0 : 1;
  for (size_t d = 0; d < 2; ++d) {
    dims[d].batch = x.known && time_major ? x[*time_major ? 1 : 0] : -1;
    // The backward cell reads the auxiliary input in parallel linking.
    dims[d].input_size = d == 1 && aux && aux_weights == 0 ? c.dim(39, 2) : c.dim(0, 2);
    lstm_operands(c, at[d], dims[d]);
  }
  if (aux_weights && !aux)
    c.fail(Rule::Parameter, "auxiliary weights (inputs 40 to 47) without the auxiliary input 39");
  const size_t cross_count = (dims[0].cifg ? 3 : 4) + (dims[1].cifg ? 3 : 4);
  if (aux_weights != 0 && aux_weights != cross_count)
    c.fail(Rule::Parameter, "the auxiliary weights (inputs 40 to 47) are partly omitted; NNAPI's " +
                                std::string(c.name()) +
                                " takes all of them (but the input gates' with CIFG) or none");
  if (!c.full()) return;
  merged_output_count(c, 51);
  if (!c.shapes()) return;
  if (aux_weights)
    for (size_t d = 0; d < 2; ++d)
      for (size_t k = 0; k < 4; ++k)
        tensor_dims(c, 40 + 4 * d + k, "auxiliary weights", {dims[d].num_units, c.dim(39, 2)});
  bidirectional_output_shapes(c, dims[0].output_size, dims[1].output_size);
}

// ---- SVDF (level 1; TENSOR_FLOAT16 since level 3): input [batch,
// input_size], weights_feature [num_filters, input_size], weights_time
// [num_filters, memory_size], bias [num_units] (optional), state_in [batch,
// memory_size * num_filters], rank (INT32, > 0, dividing num_filters =
// num_units * rank), FuseCode. Outputs: state_out (state_in's shape), output
// [batch, num_units]. The state size is Android's reference implementation's
// (SVDF.cpp) and its conformance tests'; NeuralNetworks.h's text writes
// (memory_size - 1) * num_units * rank.

void svdf_rule(Check& c) {
  c.input_count({7});
  c.output_count(2);
  typed(c, {{T::TensorFloat32, 1}, {T::TensorFloat16, 3}});
  c.input_rank(0, 2, 2);
  for (size_t i = 1; i <= 4; ++i) c.input_type(i, {c.type(0)});
  present(c, 1, "weights_feature");
  present(c, 2, "weights_time");
  present(c, 4, "state_in");
  c.input_type(5, {T::Int32});
  c.input_type(6, {T::Int32});
  for (size_t o = 0; o < 2; ++o) {
    c.output_same_type(o, 0);
    c.output_rank(o, 2, 2);
  }
  if (!c.full()) return;
  c.fuse_code(6);
  const auto rank = c.i32(5);
  if (rank && *rank <= 0)
    c.fail(Rule::Parameter, "input 5 (rank) is " + str(*rank) + "; NNAPI's SVDF needs it > 0");
  if (!c.shapes()) return;
  const int64_t batch = c.dim(0, 0), filters = c.dim(1, 0), memory = c.dim(2, 1);
  tensor_dims(c, 1, "weights_feature", {filters, c.dim(0, 1)});
  tensor_dims(c, 2, "weights_time", {filters, memory});
  if (memory == 0)
    c.fail(Rule::Parameter,
           "input 2 (weights_time) has memory_size (dim 1) 0; NNAPI's SVDF "
           "needs at least 1");
  if (rank && filters >= 0 && filters % *rank != 0)
    c.fail(Rule::Parameter, "weights_feature has " + str(filters) +
                                " filters (dim 0), not a multiple of the rank " + str(*rank) +
                                "; NNAPI's SVDF has num_units * rank filters");
  const int64_t units = rank && filters >= 0 ? filters / *rank : -1;
  const int64_t state = filters >= 0 && memory >= 0 ? filters * memory : -1;
  tensor_dims(c, 3, "bias", {units});
  tensor_dims(c, 4, "state_in, [batch, memory_size * num_units * rank]", {batch, state});
  c.set_output(0, Shape::of({batch, state}));
  c.set_output(1, Shape::of({batch, units}));
}

// ---- QUANTIZED_16BIT_LSTM (level 3): 15 inputs, 2 outputs (see the
// runtime's ops/recurrent.cpp for their meaning). NeuralNetworks.h fixes the
// quantization: the input, previous output and output scale 1/128 zero
// point 128; the cell states QUANT16_SYMM scale 2^-11 zero point 0; the
// eight weights one scale and zero point; the four biases TENSOR_INT32
// scale weights_scale / 128 zero point 0.

// An operand's scale and zero point are `scale`, `zero_point`.
void quant_is(const Check& c, const Operand& o, const std::string& what, float scale,
              int32_t zero_point) {
  if (o.scale == scale && o.zero_point == zero_point) return;
  c.fail(Rule::Quantization, what + " has scale " + std::to_string(o.scale) + " and zero point " +
                                 str(o.zero_point) + "; NNAPI's " + c.name() + " needs scale " +
                                 std::to_string(scale) + " and zero point " + str(zero_point));
}

void quantized_16bit_lstm_rule(Check& c) {
  c.input_count({15});
  c.output_count(2);
  typed(c, {{T::TensorQuant8Asymm, 3}});
  for (size_t i = 1; i <= 8; ++i) c.input_type(i, {T::TensorQuant8Asymm});
  for (size_t i = 9; i <= 12; ++i) c.input_type(i, {T::TensorInt32});
  c.input_type(13, {T::TensorQuant16Symm});
  c.input_type(14, {T::TensorQuant8Asymm});
  c.output_type(0, {T::TensorQuant16Symm});
  c.output_type(1, {T::TensorQuant8Asymm});
  for (size_t i = 0; i < 15; ++i) present(c, i, i == 0 ? "input" : "a weight, bias or state");
  c.input_rank(0, 2, 2);
  c.output_rank(0, 2, 2);
  c.output_rank(1, 2, 2);
  const float q8 = 1.0f / 128, q16 = 1.0f / 2048;
  quant_is(c, c.in(0), "input 0 (input)", q8, 128);
  quant_is(c, c.in(13), "input 13 (previous cell state)", q16, 0);
  quant_is(c, c.in(14), "input 14 (previous output)", q8, 128);
  quant_is(c, c.out(0), "output 0 (cell state out)", q16, 0);
  quant_is(c, c.out(1), "output 1 (output)", q8, 128);
  const Operand& w = c.in(1);
  if (w.scale <= 0) c.fail(Rule::Quantization, "input 1 (weights) has scale 0");
  for (size_t i = 2; i <= 8; ++i)
    quant_is(c, c.in(i), in_name(i) + " (weights, like input 1)", w.scale, w.zero_point);
  for (size_t i = 9; i <= 12; ++i)
    quant_is(c, c.in(i), in_name(i) + " (bias, the weights' scale / 128)", w.scale / 128, 0);
  if (!c.shapes()) return;
  const int64_t batch = c.dim(0, 0), in = c.dim(0, 1);
  const int64_t out = c.dim(14, 1) >= 0 ? c.dim(14, 1) : c.dim(1, 0);
  for (size_t i = 1; i <= 4; ++i) tensor_dims(c, i, "input weights", {out, in});
  for (size_t i = 5; i <= 8; ++i) tensor_dims(c, i, "recurrent weights", {out, out});
  for (size_t i = 9; i <= 12; ++i) tensor_dims(c, i, "bias", {out});
  tensor_dims(c, 13, "previous cell state", {batch, out});
  tensor_dims(c, 14, "previous output", {batch, out});
  c.set_output(0, Shape::of({batch, out}));
  c.set_output(1, Shape::of({batch, out}));
}

}  // namespace

void add_recurrent_rules(std::vector<OpRule>& t) {
  t.push_back({nnapi::Op::BidirectionalSequenceLstm, bidirectional_sequence_lstm_rule});
  t.push_back({nnapi::Op::BidirectionalSequenceRnn, bidirectional_sequence_rnn_rule});
  t.push_back({nnapi::Op::Rnn, rnn_rule});
  t.push_back({nnapi::Op::UnidirectionalSequenceRnn, unidirectional_sequence_rnn_rule});
  t.push_back({nnapi::Op::Lstm, lstm_rule});
  t.push_back({nnapi::Op::Svdf, svdf_rule});
  t.push_back({nnapi::Op::Quantized16BitLstm, quantized_16bit_lstm_rule});
  t.push_back({nnapi::Op::UnidirectionalSequenceLstm, unidirectional_sequence_lstm_rule});
}

}  // namespace nnapi_validate
