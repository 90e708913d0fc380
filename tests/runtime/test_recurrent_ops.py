#!/usr/bin/env python3
"""NNAPI's recurrent operations checked against NeuralNetworks.h's formulas.

Each case builds an NNAPI model by calling libneuralnetworks.so directly (the
Model helper of test_extra_ops.py), runs it, and compares the result with
values computed here, in float64, from the formulas NeuralNetworks.h gives
for the operation (feature level <= 3) and the details Android's reference
CPU implementation fixes (the layer normalization's epsilon 1e-8, the order
of the bias and the layer-norm weights): never with values the runtime
produced. The last line is "N passed, M failed"; the exit status is non-zero
on any failure.
"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_extra_ops import (BOOL, CODES, F32, I32, T_F32, T_I32, Model, _refused,  # noqa: E402
                            close, lib, run_cases, u32_array)

T_F16, F16 = 8, 10
T_Q8, T_Q16S = 5, 7  # TENSOR_QUANT8_ASYMM, TENSOR_QUANT16_SYMM
CODES.update(LSTM=16, UNIDIRECTIONAL_SEQUENCE_LSTM=92, RNN=24, UNIDIRECTIONAL_SEQUENCE_RNN=93,
             BIDIRECTIONAL_SEQUENCE_RNN=43, BIDIRECTIONAL_SEQUENCE_LSTM=42, SVDF=27,
             QUANTIZED_16BIT_LSTM=73)
DTYPE = {T_F32: torch.float32, T_F16: torch.float16}
GATES = "ifgo"  # input, forget, cell, output: NNAPI's operand order


def omitted(m, code):
    """An operand with no value (NNAPI's optional input left out)."""
    idx = m.operand(code, ())
    if lib.ANeuralNetworksModel_setOperandValue(m.handle, idx, None, 0) != 0:
        raise RuntimeError("setOperandValue(NULL, 0) returned an error")
    return idx


def activation(v, code):
    """NeuralNetworks.h's LSTM activations: 0 none, 1 RELU, 3 RELU6, 4 TANH, 6 SIGMOID."""
    return {0: lambda t: t, 1: lambda t: t.clamp(min=0), 2: lambda t: t.clamp(-1, 1),
            3: lambda t: t.clamp(0, 6), 4: torch.tanh, 6: torch.sigmoid}[code](v)


def make_lstm(n_in, n_units, n_out, cifg=False, peephole=False, projection=False,
              proj_bias=False, layer_norm=False, scale=0.4):
    """Random LSTM operands, a dict of float64 tensors (absent ones missing)."""
    p = {}
    for g in GATES:
        if cifg and g == "i":
            continue
        p["wx_" + g] = torch.randn(n_units, n_in, dtype=torch.float64) * scale
        p["wh_" + g] = torch.randn(n_units, n_out, dtype=torch.float64) * scale
        p["b_" + g] = torch.randn(n_units, dtype=torch.float64) * scale
        if layer_norm:
            p["ln_" + g] = 1 + torch.randn(n_units, dtype=torch.float64) * 0.2
        if peephole and g != "g":
            p["p_" + g] = torch.randn(n_units, dtype=torch.float64) * scale
    if projection:
        p["proj"] = torch.randn(n_out, n_units, dtype=torch.float64) * scale
        if proj_bias:
            p["proj_b"] = torch.randn(n_out, dtype=torch.float64) * scale
    return p


def lstm_step_formula(p, x, h, c, act, cell_clip, proj_clip):
    """One LSTM step as NeuralNetworks.h writes it (x [batch, in], h, c)."""
    def gate(g, c_peep):
        v = x @ p["wx_" + g].T + h @ p["wh_" + g].T
        if "p_" + g in p:
            v = v + p["p_" + g] * c_peep
        if "ln_" + g in p:
            mean = v.mean(1, keepdim=True)
            var = ((v - mean) ** 2).mean(1, keepdim=True)
            return (v - mean) / torch.sqrt(var + 1e-8) * p["ln_" + g] + p["b_" + g]
        return v + p["b_" + g]
    f = torch.sigmoid(gate("f", c))
    i = 1 - f if "wx_i" not in p else torch.sigmoid(gate("i", c))
    c_new = f * c + i * activation(gate("g", None), act)
    if cell_clip > 0:
        c_new = c_new.clamp(-cell_clip, cell_clip)
    o = torch.sigmoid(gate("o", c_new))
    h_new = o * activation(c_new, act)
    if "proj" in p:
        h_new = h_new @ p["proj"].T + p.get("proj_b", 0)
        if proj_clip > 0:
            h_new = h_new.clamp(-proj_clip, proj_clip)
    return h_new, c_new


def lstm_weight_operands(m, p, code):
    """Inputs 1-17 of LSTM and UNIDIRECTIONAL_SEQUENCE_LSTM (omitted where absent)."""
    dt = DTYPE[code]

    def t(key):
        return m.const(code, p[key].to(dt)) if key in p else omitted(m, code)
    ins = [t("wx_" + g) for g in GATES] + [t("wh_" + g) for g in GATES]
    ins += [t("p_" + g) for g in "ifo"] + [t("b_" + g) for g in GATES]
    return ins + [t("proj"), t("proj_b")]


def scalar_float(m, code, value):
    if code == T_F16:
        return m.const(F16, torch.tensor(value, dtype=torch.float16), dims=())
    return m.const(F32, value)


def sequence_lstm(x, p, h0, c0, act=4, cell_clip=0.0, proj_clip=0.0, time_major=True,
                  code=T_F32, declared_out=None):
    """Runs UNIDIRECTIONAL_SEQUENCE_LSTM on the runtime; returns its output."""
    dt = DTYPE[code]
    m = Model()
    i = m.input(code, tuple(x.shape))
    ins = [i] + lstm_weight_operands(m, p, code)
    ins += [m.input(code, tuple(h0.shape)), m.input(code, tuple(c0.shape))]
    ins += [m.const(I32, act), scalar_float(m, code, cell_clip), scalar_float(m, code, proj_clip),
            m.const(BOOL, time_major)]
    ins += [m.const(code, p["ln_" + g].to(dt)) if "ln_" + g in p else omitted(m, code)
            for g in GATES]
    o = m.output(code, declared_out or (0, 0, 0))
    m.op("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, [o])
    return m.run([x.to(dt), h0.to(dt), c0.to(dt)], [dt])[0]


def sequence_formula(x, p, h0, c0, act=4, cell_clip=0.0, proj_clip=0.0, time_major=True):
    """The expected output: the step formula at each time step, outputs stacked."""
    xs = x.double() if time_major else x.double().transpose(0, 1)
    h, c, out = h0.double(), c0.double(), []
    for t in range(xs.shape[0]):
        h, c = lstm_step_formula(p, xs[t], h, c, act, cell_clip, proj_clip)
        out.append(h)
    y = torch.stack(out)
    return y if time_major else y.transpose(0, 1)


# ------------------------------------------------------------------ cases

def case_sequence_lstm_every_option():
    # No CIFG, peephole, projection with bias, layer normalization, both
    # clips (small enough to bite), time-major [max_time 4, batch 2, input 3].
    torch.manual_seed(11)
    p = make_lstm(3, 5, 4, peephole=True, projection=True, proj_bias=True, layer_norm=True,
                  scale=0.8)
    x = torch.randn(4, 2, 3)
    h0, c0 = torch.randn(2, 4) * 0.5, torch.randn(2, 5)
    args = dict(act=4, cell_clip=0.9, proj_clip=0.6, time_major=True)
    got = sequence_lstm(x, p, h0, c0, **args)
    want = sequence_formula(x, p, h0, c0, **args)
    assert got.shape == (4, 2, 4), got.shape
    assert (want.abs() == 0.6).any() and (want.abs() < 0.6).any()  # the projection clip bites
    close(got.double(), want, atol=2e-5, rtol=1e-5)


def case_sequence_lstm_cifg_peephole_layer_norm_batch_major():
    # CIFG (input gate = 1 - forget gate) with peepholes and layer
    # normalization, batch-major [batch 3, max_time 5, input 2], RELU6.
    torch.manual_seed(12)
    p = make_lstm(2, 4, 4, cifg=True, peephole=True, layer_norm=True)
    x = torch.randn(3, 5, 2)
    h0, c0 = torch.zeros(3, 4), torch.zeros(3, 4)
    for act in (3, 6):
        got = sequence_lstm(x, p, h0, c0, act=act, time_major=False)
        want = sequence_formula(x, p, h0, c0, act=act, time_major=False)
        assert got.shape == (3, 5, 4), got.shape
        close(got.double(), want, atol=2e-5, rtol=1e-5)


def case_sequence_lstm_plain_matches_torch_lstm_cell():
    # Without the options the cell is the classic LSTM: with the biases of a
    # torch.nn.LSTMCell (b_ih + b_hh) and its weights split by gate (PyTorch
    # orders them i, f, g, o), the formula gives LSTMCell's steps. Checked
    # here on the formula itself, then the runtime against the formula.
    torch.manual_seed(13)
    cell = torch.nn.LSTMCell(3, 4).double()
    w_ih, w_hh = cell.weight_ih.detach().chunk(4), cell.weight_hh.detach().chunk(4)
    b = (cell.bias_ih + cell.bias_hh).detach().chunk(4)
    p = {}
    for k, g in enumerate(GATES):
        p["wx_" + g], p["wh_" + g], p["b_" + g] = w_ih[k], w_hh[k], b[k]
    x = torch.randn(6, 2, 3, dtype=torch.float64)
    h, c = torch.zeros(2, 4, dtype=torch.float64), torch.zeros(2, 4, dtype=torch.float64)
    steps = []
    with torch.no_grad():
        for t in range(6):
            h, c = cell(x[t], (h, c))
            steps.append(h)
    want = sequence_formula(x, p, torch.zeros(2, 4), torch.zeros(2, 4))
    close(want, torch.stack(steps), atol=1e-12, rtol=1e-12)
    got = sequence_lstm(x.float(), p, torch.zeros(2, 4), torch.zeros(2, 4),
                        declared_out=(6, 2, 4))
    close(got.double(), want, atol=2e-6, rtol=1e-5)


def case_sequence_lstm_float16():
    # TENSOR_FLOAT16 operands with FLOAT16 clips: computed in float32 and
    # rounded to float16 (as Android's LSTMEvalFloat16).
    torch.manual_seed(14)
    p = {k: v.half().double() for k, v in
         make_lstm(3, 4, 3, peephole=True, projection=True, scale=0.5).items()}
    x = torch.randn(5, 2, 3).half()
    h0, c0 = torch.zeros(2, 3).half(), torch.randn(2, 4).half()
    args = dict(act=4, cell_clip=1.5, proj_clip=0.0, time_major=True)
    got = sequence_lstm(x, p, h0, c0, code=T_F16, **args)
    assert got.dtype == torch.float16
    want = sequence_formula(x, p, h0.double(), c0.double(), **args)
    close(got.double(), want, atol=3e-3, rtol=2e-3)


def case_lstm_single_step():
    # LSTM (one step, 27 inputs: layer normalization): outputs scratch
    # buffer [batch, 4 * num_units], output state, cell state and output.
    torch.manual_seed(15)
    p = make_lstm(3, 5, 2, peephole=True, projection=True, layer_norm=True)
    x, h0, c0 = torch.randn(2, 3), torch.randn(2, 2), torch.randn(2, 5)
    m = Model()
    ins = [m.input(T_F32, (2, 3))] + lstm_weight_operands(m, p, T_F32)
    ins += [m.input(T_F32, (2, 2)), m.input(T_F32, (2, 5))]
    ins += [m.const(I32, 4), m.const(F32, 0.0), m.const(F32, 0.0)]
    ins += [m.const(T_F32, p["ln_" + g].float()) for g in GATES]
    outs = [m.output(T_F32, (2, 20)), m.output(T_F32, (2, 2)), m.output(T_F32, (2, 5)),
            m.output(T_F32, (2, 2))]
    m.op("LSTM", ins, outs)
    scratch, h, c, out = m.run([x, h0, c0], [torch.float32] * 4)
    want_h, want_c = lstm_step_formula(p, x.double(), h0.double(), c0.double(), 4, 0.0, 0.0)
    assert scratch.shape == (2, 20), scratch.shape
    close(h.double(), want_h, atol=2e-6, rtol=1e-5)
    close(c.double(), want_c, atol=2e-6, rtol=1e-5)
    close(out.double(), want_h, atol=2e-6, rtol=1e-5)


def case_lstm_single_step_cifg_23_inputs():
    # LSTM with 23 inputs (feature level 1 form), CIFG: scratch 3 * num_units.
    torch.manual_seed(16)
    p = make_lstm(2, 3, 3, cifg=True)
    x, h0, c0 = torch.randn(1, 2), torch.randn(1, 3), torch.randn(1, 3)
    m = Model()
    ins = [m.input(T_F32, (1, 2))] + lstm_weight_operands(m, p, T_F32)
    ins += [m.input(T_F32, (1, 3)), m.input(T_F32, (1, 3))]
    ins += [m.const(I32, 4), m.const(F32, 0.5), m.const(F32, 0.0)]
    outs = [m.output(T_F32, (0, 0)) for _ in range(4)]
    m.op("LSTM", ins, outs)
    scratch, h, c, out = m.run([x, h0, c0], [torch.float32] * 4)
    want_h, want_c = lstm_step_formula(p, x.double(), h0.double(), c0.double(), 4, 0.5, 0.0)
    assert scratch.shape == (1, 9), scratch.shape
    assert want_c.abs().max() <= 0.5
    close(c.double(), want_c, atol=2e-6, rtol=1e-5)
    close(out.double(), want_h, atol=2e-6, rtol=1e-5)


def case_validator_refusals():
    # What NeuralNetworks.h (and Android's reference validation) rejects.
    def build(cifg=False, drop=(), act=4, cell_clip=0.0, n_inputs=28, rec_cols=4,
              input_ln_with_cifg=False, out_dims=(0, 0, 0)):
        def b(m):
            p = make_lstm(3, 4, 4, cifg=cifg, peephole=True, layer_norm=True)
            p["wh_f"] = torch.randn(4, rec_cols, dtype=torch.float64)
            for k in drop:
                p.pop(k)
            ins = [m.input(T_F32, (5, 2, 3))] + lstm_weight_operands(m, p, T_F32)
            ins += [m.input(T_F32, (2, 4)), m.input(T_F32, (2, 4))]
            ins += [m.const(I32, act), m.const(F32, cell_clip), m.const(F32, 0.0),
                    m.const(BOOL, True)]
            ln = [m.const(T_F32, p["ln_" + g].float()) if "ln_" + g in p else omitted(m, T_F32)
                  for g in GATES]
            if input_ln_with_cifg:
                ln[0] = m.const(T_F32, torch.ones(4))
            ins = (ins + ln)[:n_inputs]
            m.op("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, [m.output(T_F32, out_dims)])
        return b

    assert not _refused(build())
    assert not _refused(build(cifg=True))
    bad = {"input gate weights without its bias": build(drop=("b_i",)),
           "input gate bias without its weights": build(drop=("wx_i", "wh_i", "p_i")),
           "one peephole omitted": build(drop=("p_f",)),
           "one layer-norm weight omitted": build(drop=("ln_g",)),
           "input layer-norm weights with CIFG": build(cifg=True, input_ln_with_cifg=True),
           "activation 5": build(act=5),
           "negative cell clip": build(cell_clip=-1.0),
           "27 inputs": build(n_inputs=27),
           "recurrent weights of the wrong width": build(rec_cols=3),
           "forget gate weights omitted": build(drop=("wx_f",)),
           "output declared with the wrong size": build(out_dims=(5, 2, 3))}
    wrongly_accepted = [what for what, b in bad.items() if not _refused(b)]
    assert not wrongly_accepted, wrongly_accepted


def rnn_formula(x, w, r, b, h, fuse):
    """NeuralNetworks.h's RNN: output = activation(input * W^T + h * R^T + bias)."""
    return activation(x @ w.T + h @ r.T + b, fuse)


def case_rnn_single_step():
    # RNN: outputs hidden state out and output, both the new hidden state.
    torch.manual_seed(21)
    x, h = torch.randn(3, 4), torch.randn(3, 5)
    w, r, b = torch.randn(5, 4) * 0.5, torch.randn(5, 5) * 0.5, torch.randn(5) * 0.5
    for fuse in (0, 1, 2, 3):
        m = Model()
        ins = [m.input(T_F32, (3, 4)), m.const(T_F32, w), m.const(T_F32, r), m.const(T_F32, b),
               m.input(T_F32, (3, 5)), m.const(I32, fuse)]
        outs = [m.output(T_F32, (0, 0)), m.output(T_F32, (3, 5))]
        m.op("RNN", ins, outs)
        state, out = m.run([x, h], [torch.float32] * 2)
        want = rnn_formula(x.double(), w.double(), r.double(), b.double(), h.double(), fuse)
        close(state.double(), want, atol=2e-6, rtol=1e-5)
        close(out.double(), want, atol=2e-6, rtol=1e-5)


def sequence_rnn(x, w, r, b, h, fuse, time_major, code=T_F32):
    dt = DTYPE[code]
    m = Model()
    ins = [m.input(code, tuple(x.shape)), m.const(code, w.to(dt)), m.const(code, r.to(dt)),
           m.const(code, b.to(dt)), m.input(code, tuple(h.shape)), m.const(I32, fuse),
           m.const(I32, 1 if time_major else 0)]
    m.op("UNIDIRECTIONAL_SEQUENCE_RNN", ins, [m.output(code, (0, 0, 0))])
    return m.run([x.to(dt), h.to(dt)], [dt])[0]


def case_sequence_rnn():
    # UNIDIRECTIONAL_SEQUENCE_RNN, time-major and batch-major, RELU and
    # none, float32 and float16: the RNN formula at each step.
    torch.manual_seed(22)
    w, r, b = torch.randn(6, 3) * 0.5, torch.randn(6, 6) * 0.4, torch.randn(6) * 0.5
    for time_major, fuse, code in ((True, 1, T_F32), (False, 0, T_F32), (False, 3, T_F16)):
        x = torch.randn(5, 2, 3) if time_major else torch.randn(2, 5, 3)
        h0 = torch.randn(2, 6)
        if code == T_F16:
            x, h0, w, r, b = (t.half().float() for t in (x, h0, w, r, b))
        got = sequence_rnn(x, w, r, b, h0, fuse, time_major, code)
        xs = x.double() if time_major else x.double().transpose(0, 1)
        h, steps = h0.double(), []
        for t in range(xs.shape[0]):
            h = rnn_formula(xs[t], w.double(), r.double(), b.double(), h, fuse)
            steps.append(h)
        want = torch.stack(steps) if time_major else torch.stack(steps).transpose(0, 1)
        tol = dict(atol=3e-3, rtol=2e-3) if code == T_F16 else dict(atol=2e-6, rtol=1e-5)
        close(got.double(), want, **tol)


def case_rnn_validator_refusals():
    def build(fuse=1, time_major=1, rec=(6, 6), n_inputs=7):
        def b(m):
            ins = [m.input(T_F32, (5, 2, 3)), m.const(T_F32, torch.randn(6, 3)),
                   m.const(T_F32, torch.randn(*rec)), m.const(T_F32, torch.randn(6)),
                   m.input(T_F32, (2, 6)), m.const(I32, fuse), m.const(I32, time_major)]
            m.op("UNIDIRECTIONAL_SEQUENCE_RNN", ins[:n_inputs], [m.output(T_F32, (0, 0, 0))])
        return b
    assert not _refused(build())
    bad = {"activation 4": build(fuse=4), "time_major 2": build(time_major=2),
           "recurrent weights 6x5": build(rec=(6, 5)), "6 inputs": build(n_inputs=6),
           "hidden state of the wrong batch (batch-major reading)": build(time_major=0)}
    wrongly_accepted = [what for what, b in bad.items() if not _refused(b)]
    assert not wrongly_accepted, wrongly_accepted


def bidirectional_rnn(x, fw, bw, fuse, time_major, merge, aux=None, aux_w=None):
    """Runs BIDIRECTIONAL_SEQUENCE_RNN; fw, bw: (weights, recurrent, bias, h0)."""
    m = Model()
    ins = [m.input(T_F32, tuple(x.shape))]
    for w, r, b, h in (fw, bw):
        ins += [m.const(T_F32, w), m.const(T_F32, r), m.const(T_F32, b), m.input(T_F32, tuple(h.shape))]
    ins.append(m.input(T_F32, tuple(aux.shape)) if aux is not None else omitted(m, T_F32))
    ins += [m.const(T_F32, w) if w is not None else omitted(m, T_F32) for w in (aux_w or (None, None))]
    ins += [m.const(I32, fuse), m.const(BOOL, time_major), m.const(BOOL, merge)]
    outs = [m.output(T_F32, (0, 0, 0)) for _ in range(1 if merge else 2)]
    m.op("BIDIRECTIONAL_SEQUENCE_RNN", ins, outs)
    feeds = [x, fw[3], bw[3]] + ([aux] if aux is not None else [])
    # Model inputs in operand order: x, fw h0, bw h0, aux.
    return m.run(feeds, [torch.float32] * len(outs))


def bidirectional_formula(x, fw, bw, fuse, time_major, aux=None, aux_w=None, parallel=False):
    """Forward over time, backward from the last step; each step
    activation(W x_t [+ W_aux aux_t] + R h + b); in parallel linking the
    backward direction reads the auxiliary input."""
    def seq(t):
        return t.double() if time_major else t.double().transpose(0, 1)
    xs = seq(x)
    xa = seq(aux) if aux is not None else None

    def run(params, inputs, aux_weights, reverse):
        w, r, b, h = (t.double() for t in params)
        out = [None] * inputs.shape[0]
        order = range(inputs.shape[0] - 1, -1, -1) if reverse else range(inputs.shape[0])
        for t in order:
            extra = xa[t] @ aux_weights.double().T if aux_weights is not None else 0
            h = rnn_formula(inputs[t], w, r, b + extra, h, fuse)
            out[t] = h
        y = torch.stack(out)
        return y if time_major else y.transpose(0, 1)
    aw = aux_w or (None, None)
    return run(fw, xs, aw[0], False), run(bw, xa if parallel else xs, aw[1], True)


def case_bidirectional_sequence_rnn():
    torch.manual_seed(23)

    def direction(units, inputs):
        return (torch.randn(units, inputs) * 0.5, torch.randn(units, units) * 0.4,
                torch.randn(units) * 0.3, torch.randn(2, units))
    fw, bw = direction(5, 3), direction(4, 3)
    tol = dict(atol=2e-6, rtol=1e-5)
    # No linking, time-major, two outputs; batch-major merged.
    for time_major, merge in ((True, False), (False, True)):
        x = torch.randn(6, 2, 3) if time_major else torch.randn(2, 6, 3)
        got = bidirectional_rnn(x, fw, bw, 1, time_major, merge)
        want_fw, want_bw = bidirectional_formula(x, fw, bw, 1, time_major)
        if merge:
            close(got[0].double(), torch.cat([want_fw, want_bw], 2), **tol)
        else:
            close(got[0].double(), want_fw, **tol)
            close(got[1].double(), want_bw, **tol)
    # Cross linking: both directions add aux_weights * aux_input.
    x, aux = torch.randn(6, 2, 3), torch.randn(6, 2, 2)
    aux_w = (torch.randn(5, 2) * 0.5, torch.randn(4, 2) * 0.5)
    got = bidirectional_rnn(x, fw, bw, 0, True, False, aux, aux_w)
    want_fw, want_bw = bidirectional_formula(x, fw, bw, 0, True, aux, aux_w)
    close(got[0].double(), want_fw, **tol)
    close(got[1].double(), want_bw, **tol)
    # Parallel linking: the backward direction reads the auxiliary input.
    aux = torch.randn(6, 2, 3)
    got = bidirectional_rnn(x, fw, bw, 3, True, False, aux)
    want_fw, want_bw = bidirectional_formula(x, fw, bw, 3, True, aux, parallel=True)
    close(got[0].double(), want_fw, **tol)
    close(got[1].double(), want_bw, **tol)


def case_bidirectional_rnn_validator_refusals():
    def build(merge=False, n_out=2, one_aux_weight=False):
        def b(m):
            ins = [m.input(T_F32, (6, 2, 3))]
            for units in (5, 4):
                ins += [m.const(T_F32, torch.randn(units, 3)), m.const(T_F32, torch.randn(units, units)),
                        m.const(T_F32, torch.randn(units)), m.input(T_F32, (2, units))]
            ins.append(m.input(T_F32, (6, 2, 3)) if one_aux_weight else omitted(m, T_F32))
            ins += [m.const(T_F32, torch.randn(5, 3)) if one_aux_weight else omitted(m, T_F32),
                    omitted(m, T_F32)]
            ins += [m.const(I32, 1), m.const(BOOL, True), m.const(BOOL, merge)]
            m.op("BIDIRECTIONAL_SEQUENCE_RNN", ins, [m.output(T_F32, (0, 0, 0)) for _ in range(n_out)])
        return b
    assert not _refused(build())
    assert not _refused(build(merge=True, n_out=1))
    bad = {"merged with two outputs": build(merge=True, n_out=2),
           "not merged with one output": build(merge=False, n_out=1),
           "one auxiliary weight": build(one_aux_weight=True)}
    wrongly_accepted = [what for what, b in bad.items() if not _refused(b)]
    assert not wrongly_accepted, wrongly_accepted


def bidirectional_lstm(x, fw, bw, states, act, time_major, merge, aux=None, aux_w=None,
                       cell_clip=0.0):
    """Runs BIDIRECTIONAL_SEQUENCE_LSTM; fw, bw: make_lstm dicts; states:
    (fw h, fw c, bw h, bw c); aux_w: (fw, bw) dicts of "wa_" + gate."""
    m = Model()
    ins = [m.input(T_F32, tuple(x.shape))]
    ins += lstm_weight_operands(m, fw, T_F32) + lstm_weight_operands(m, bw, T_F32)
    ins += [m.input(T_F32, tuple(t.shape)) for t in states]
    ins.append(m.input(T_F32, tuple(aux.shape)) if aux is not None else omitted(m, T_F32))
    for weights in aux_w or ({}, {}):
        ins += [m.const(T_F32, weights["wa_" + g].float()) if "wa_" + g in weights
                else omitted(m, T_F32) for g in GATES]
    ins += [m.const(I32, act), m.const(F32, cell_clip), m.const(F32, 0.0), m.const(BOOL, merge),
            m.const(BOOL, time_major)]
    for p in (fw, bw):
        ins += [m.const(T_F32, p["ln_" + g].float()) if "ln_" + g in p else omitted(m, T_F32)
                for g in GATES]
    outs = [m.output(T_F32, (0, 0, 0)) for _ in range(1 if merge else 2)]
    m.op("BIDIRECTIONAL_SEQUENCE_LSTM", ins, outs)
    feeds = [x] + list(states) + ([aux] if aux is not None else [])
    return m.run(feeds, [torch.float32] * len(outs))


def lstm_direction_formula(p, xs, h, c, act, cell_clip, reverse, aux=None, aux_w=None):
    """The step formula over time-major xs (backwards when reverse), with
    W_aux aux_t added to each gate when aux_w is given."""
    out = [None] * xs.shape[0]
    order = range(xs.shape[0] - 1, -1, -1) if reverse else range(xs.shape[0])
    q = dict(p)
    for t in order:
        if aux_w is not None:
            # W_x x + W_aux aux = [W_x W_aux] [x; aux]
            step_x = torch.cat([xs[t], aux[t]], 1)
            for g in GATES:
                if "wx_" + g in p:
                    q["wx_" + g] = torch.cat([p["wx_" + g], aux_w["wa_" + g]], 1)
        else:
            step_x = xs[t]
        h, c = lstm_step_formula(q, step_x, h, c, act, cell_clip, 0.0)
        out[t] = h
    return torch.stack(out)


def case_bidirectional_sequence_lstm():
    torch.manual_seed(24)
    fw = make_lstm(3, 5, 5, peephole=True, layer_norm=True)
    bw = make_lstm(3, 4, 2, cifg=True, projection=True, proj_bias=True)
    states = (torch.randn(2, 5) * 0.5, torch.randn(2, 5), torch.randn(2, 2) * 0.5,
              torch.randn(2, 4))
    d = [t.double() for t in states]
    tol = dict(atol=2e-5, rtol=1e-5)
    # No linking: time-major with two outputs, batch-major merged.
    for time_major, merge in ((True, False), (False, True)):
        x = torch.randn(6, 2, 3) if time_major else torch.randn(2, 6, 3)
        got = bidirectional_lstm(x, fw, bw, states, 4, time_major, merge, cell_clip=1.2)
        xs = x.double() if time_major else x.double().transpose(0, 1)
        want_fw = lstm_direction_formula(fw, xs, d[0], d[1], 4, 1.2, False)
        want_bw = lstm_direction_formula(bw, xs, d[2], d[3], 4, 1.2, True)
        if not time_major:
            want_fw, want_bw = want_fw.transpose(0, 1), want_bw.transpose(0, 1)
        if merge:
            close(got[0].double(), torch.cat([want_fw, want_bw], 2), **tol)
        else:
            close(got[0].double(), want_fw, **tol)
            close(got[1].double(), want_bw, **tol)
    # Cross linking: every gate adds W_aux aux_t (none for the CIFG input gate).
    x, aux = torch.randn(5, 2, 3), torch.randn(5, 2, 2)
    aux_w = ({"wa_" + g: torch.randn(5, 2, dtype=torch.float64) * 0.4 for g in GATES},
             {"wa_" + g: torch.randn(4, 2, dtype=torch.float64) * 0.4 for g in "fgo"})
    got = bidirectional_lstm(x, fw, bw, states, 4, True, False, aux, aux_w)
    close(got[0].double(), lstm_direction_formula(fw, x.double(), d[0], d[1], 4, 0.0, False,
                                                  aux.double(), aux_w[0]), **tol)
    close(got[1].double(), lstm_direction_formula(bw, x.double(), d[2], d[3], 4, 0.0, True,
                                                  aux.double(), aux_w[1]), **tol)
    # Parallel linking: the backward cell reads the auxiliary input.
    aux = torch.randn(5, 2, 3)
    got = bidirectional_lstm(x, fw, bw, states, 4, True, False, aux)
    close(got[0].double(), lstm_direction_formula(fw, x.double(), d[0], d[1], 4, 0.0, False),
          **tol)
    close(got[1].double(), lstm_direction_formula(bw, aux.double(), d[2], d[3], 4, 0.0, True),
          **tol)


def case_bidirectional_lstm_validator_refusals():
    def build(merge=False, n_out=2, drop_aux_weight=False, bw_peephole_partial=False):
        def b(m):
            fw = make_lstm(3, 4, 4)
            bw = make_lstm(3, 4, 4, peephole=True)
            if bw_peephole_partial:
                bw.pop("p_o")
            aux_w = None
            aux = None
            if drop_aux_weight:
                aux = torch.randn(5, 2, 2)
                aux_w = ({"wa_" + g: torch.randn(4, 2, dtype=torch.float64) for g in "ifg"},
                         {"wa_" + g: torch.randn(4, 2, dtype=torch.float64) for g in GATES})
            ins = [m.input(T_F32, (5, 2, 3))]
            ins += lstm_weight_operands(m, fw, T_F32) + lstm_weight_operands(m, bw, T_F32)
            ins += [m.input(T_F32, (2, 4)) for _ in range(4)]
            ins.append(m.input(T_F32, (5, 2, 2)) if aux is not None else omitted(m, T_F32))
            for weights in aux_w or ({}, {}):
                ins += [m.const(T_F32, weights["wa_" + g].float()) if "wa_" + g in weights
                        else omitted(m, T_F32) for g in GATES]
            ins += [m.const(I32, 4), m.const(F32, 0.0), m.const(F32, 0.0), m.const(BOOL, merge),
                    m.const(BOOL, True)]
            ins += [omitted(m, T_F32) for _ in range(8)]
            m.op("BIDIRECTIONAL_SEQUENCE_LSTM", ins,
                 [m.output(T_F32, (0, 0, 0)) for _ in range(n_out)])
        return b
    assert not _refused(build())
    assert not _refused(build(merge=True, n_out=1))
    bad = {"merged with two outputs": build(merge=True, n_out=2),
           "an auxiliary weight omitted": build(drop_aux_weight=True),
           "a backward peephole omitted": build(bw_peephole_partial=True)}
    wrongly_accepted = [what for what, b in bad.items() if not _refused(b)]
    assert not wrongly_accepted, wrongly_accepted


# ------------------------------------------------------------------ SVDF

def svdf_formula(x, wf, wt, bias, state, rank, fuse):
    """One SVDF step from NeuralNetworks.h's formula, in float64 loops, with
    the state layout of Android's reference SVDF.cpp: state [batch, filters *
    memory], filter f's memory at f * memory .. f * memory + memory - 1, the
    newest feature last. Returns (state_out, output)."""
    x, wf, wt, state = (t.double() for t in (x, wf, wt, state))
    batch, filters, memory = x.shape[0], wf.shape[0], wt.shape[1]
    units = filters // rank
    new_state = torch.zeros(batch, filters * memory, dtype=torch.float64)
    out = torch.zeros(batch, units, dtype=torch.float64)
    for b in range(batch):
        scratch = []
        for f in range(filters):
            mem = [float(state[b, f * memory + m]) for m in range(memory)]
            mem[memory - 1] = sum(float(wf[f, i] * x[b, i]) for i in range(x.shape[1]))
            scratch.append(sum(float(wt[f, m]) * mem[m] for m in range(memory)))
            for m in range(memory - 1):  # shifted one step: the oldest drops out
                new_state[b, f * memory + m] = mem[m + 1]
        for u in range(units):
            v = sum(scratch[u * rank + r] for r in range(rank))
            out[b, u] = v + (float(bias[u]) if bias is not None else 0.0)
    return new_state, activation(out, fuse)


def svdf(x, wf, wt, bias, state, rank, fuse, code=T_F32, declared=((0, 0), (0, 0))):
    """Runs one SVDF step on the runtime; returns (state_out, output)."""
    dt = DTYPE[code]
    m = Model()
    ins = [m.input(code, tuple(x.shape)), m.const(code, wf.to(dt)), m.const(code, wt.to(dt)),
           m.const(code, bias.to(dt)) if bias is not None else omitted(m, code),
           m.input(code, tuple(state.shape)), m.const(I32, rank), m.const(I32, fuse)]
    outs = [m.output(code, declared[0]), m.output(code, declared[1])]
    m.op("SVDF", ins, outs)
    return m.run([x.to(dt), state.to(dt)], [dt, dt])


def svdf_steps(xs, wf, wt, bias, rank, fuse, code=T_F32):
    """Runs SVDF over the steps xs [steps, batch, input] from a zero state,
    feeding each state_out back; returns the outputs and the last state."""
    filters, memory = wf.shape[0], wt.shape[1]
    state = torch.zeros(xs.shape[1], filters * memory, dtype=DTYPE[code])
    got = []
    for x in xs:
        state, out = svdf(x, wf, wt, bias, state, rank, fuse, code)
        got.append(out)
    return torch.stack(got), state


# Android's conformance data (frameworks/ml/nn/runtime/test/specs: svdf2.mod.py
# and svdf_bias_present.mod.py, from TFLite's svdf_test): weights, ten inputs
# of two batches and the golden outputs of the ten steps, starting from a zero
# state with each step's state_out fed back (the .mod.py files run the first
# step only). Inputs 3 and 4 of svdf2 are batch 0's and batch 1's.
SVDF_WT = [
    -0.31930989, 0.37613347, 0.27901134, -0.36137494, -0.36118156,
    0.22197971, 0.27557442, -0.06634006, 0.0079667, 0.12416199,
    0.3905206, -0.10640851, -0.0976817, 0.15294972, 0.39635518,
    -0.02702999, 0.39296314, 0.15785322, 0.21931258, 0.31053296,
    -0.36916667, 0.38031587, -0.21580373, 0.27072677, 0.23622236,
    0.34936687, 0.18174365, 0.35907319, -0.17493086, 0.324846,
    -0.10781813, 0.27201805, 0.14324132, -0.23681851, -0.27115166,
    -0.01580888, -0.14943552, 0.15465137, 0.09784451, -0.0337657,
    -0.14884081, 0.19931212, -0.36002168, 0.34663299, -0.11405486,
    0.12672701, 0.39463779, -0.07886535, -0.06384811, 0.08249187,
    -0.26816407, -0.19905911, 0.29211238, 0.31264046, -0.28664589,
    0.05698794, 0.11613581, 0.14078894, 0.02187902, -0.21781836,
    -0.15567942, 0.08693647, -0.38256618, 0.36580828, -0.22922277,
    -0.0226903, 0.12878349, -0.28122205, -0.10850525, -0.11955214,
    0.27179423, -0.04710215, 0.31069002, 0.22672787, 0.09580326,
    0.08682203, 0.1258215, 0.1851041, 0.29228821, 0.12366763]
SVDF_INPUTS = [
    0.12609188, -0.46347019, -0.89598465, 0.35867718, 0.36897406, 0.73463392,
    0.14278367, -1.64410412, -0.75222826, -0.57290924, 0.12729003, 0.7567004,
    0.49837467, 0.19278903, 0.26584083, 0.17660543, 0.52949083, -0.77931279,
    -0.11186574, 0.13164264, -0.05349274, -0.72674477, -0.5683046, 0.55900657,
    -0.68892461, 0.37783599, 0.18263303, -0.63690937, 0.44483393, -0.71817774,
    -0.81299269, -0.86831826, 1.43940818, -0.95760226, 1.82078898, 0.71135032,
    -1.45006323, -0.82251364, -1.69082689, -1.65087092, -1.89238167, 1.54172635,
    0.03966608, -0.24936394, -0.77526885, 2.06740379, -1.51439476, 1.43768692,
    0.11771342, -0.23761693, -0.65898693, 0.31088525, -1.55601168, -0.87661445,
    -0.89477462, 1.67204106, -0.53235275, -0.6230064, 0.29819036, 1.06939757]
SVDF2_WF = [
    -0.31930989, 0.0079667, 0.39296314, 0.37613347, 0.12416199, 0.15785322,
    0.27901134, 0.3905206, 0.21931258, -0.36137494, -0.10640851, 0.31053296,
    -0.36118156, -0.0976817, -0.36916667, 0.22197971, 0.15294972, 0.38031587,
    0.27557442, 0.39635518, -0.21580373, -0.06634006, -0.02702999, 0.27072677]
SVDF2_GOLDEN = [
    -0.09623547, -0.10193135, 0.11083051, -0.0347917, 0.1141196, 0.12965347, -0.12652366,
    0.01007236, -0.16396809, -0.21247184, 0.11259045, -0.04156673, 0.10132131, -0.06143532,
    -0.00924693, 0.10084561, 0.01257364, 0.0506071, -0.19287863, -0.07162561, -0.02033747,
    0.22673416, 0.15487903, 0.02525555, -0.1411963, -0.37054959, 0.01774767, 0.05867489,
    0.09607603, -0.0141301, -0.08995658, 0.12867066, -0.27142537, -0.16955489, 0.18521598,
    -0.12528358, 0.00331409, 0.11167502, 0.02218599, -0.07309391, 0.09593632, -0.28361851,
    -0.0773851, 0.17199151, -0.00075242, 0.33691186, -0.1536046, 0.16572715, -0.27916506,
    -0.27626723, 0.42615682, 0.3225764, -0.37472126, -0.55655634, -0.05013514, 0.289112,
    -0.24418658, 0.07540751, -0.1940318, -0.08911639, 0.00732617, 0.46737891, 0.26449674,
    0.24888524, -0.17225097, -0.54660404, -0.38795233, 0.08389944, 0.07736043, -0.28260678,
    0.15666828, 1.14949894, -0.57454878, -0.64704704, 0.73235172, -0.34616736, 0.21120001,
    -0.22927976, 0.02455296, -0.35906726]
SVDF_BIAS_WF = [
    -0.31930989, -0.36118156, 0.0079667, 0.37613347, 0.22197971, 0.12416199,
    0.27901134, 0.27557442, 0.3905206, -0.36137494, -0.06634006, -0.10640851]
# svdf_bias_present: both batches get the same input (row 0 of each step).
SVDF_BIAS_GOLDEN = [
    1.014899, 1.9482339, 2.856275, 3.99728117, 1.068281, 1.837783, 2.847732, 4.00323521,
    0.9682179, 1.9666911, 3.0609602, 4.0333759, 0.99376901, 1.922299, 2.608807, 3.9863309,
    1.201551, 1.835393, 2.820538, 3.9407261, 1.0886511, 1.9124599, 2.730717, 4.0281379,
    0.798826, 1.413855, 2.371376, 3.9669588, 0.9160904, 1.700671, 3.108746, 4.109808,
    1.419114, 1.762176, 2.577373, 4.175115, 1.36726, 1.477697, 2.543498, 3.824525]


def case_svdf_conformance_rank2():
    # svdf2.mod.py: 8 filters, rank 2 (4 units), memory 10, no bias, ten steps.
    xs = torch.tensor(SVDF_INPUTS).reshape(10, 2, 3)
    wf = torch.tensor(SVDF2_WF).reshape(8, 3)
    wt = torch.tensor(SVDF_WT).reshape(8, 10)
    want = torch.tensor(SVDF2_GOLDEN).reshape(10, 2, 4)
    for code, tol in ((T_F32, dict(atol=1e-5, rtol=1e-5)), (T_F16, dict(atol=6e-3, rtol=5e-3))):
        got, _ = svdf_steps(xs, wf, wt, None, 2, 0, code)
        close(got.double(), want.double(), **tol)


def case_svdf_conformance_bias_present():
    # svdf_bias_present.mod.py: 4 filters, rank 1, memory 10, bias 1..4.
    xs = torch.tensor(SVDF_INPUTS).reshape(10, 2, 3)[:, :1].expand(10, 2, 3).contiguous()
    wf = torch.tensor(SVDF_BIAS_WF).reshape(4, 3)
    wt = torch.tensor(SVDF_WT[:40]).reshape(4, 10)
    bias = torch.tensor([1.0, 2.0, 3.0, 4.0])
    want = torch.tensor(SVDF_BIAS_GOLDEN).reshape(10, 4)
    got, _ = svdf_steps(xs, wf, wt, bias, 1, 0)
    close(got[:, 0].double(), want.double(), atol=1e-5, rtol=1e-5)
    close(got[:, 1].double(), want.double(), atol=1e-5, rtol=1e-5)


def case_svdf_formula():
    # Random weights, a random (non-zero) state, rank 3, each activation; the
    # state out and output of one step against the formula; memory_size 1
    # (no history: the state out is all zeros); float16.
    torch.manual_seed(31)
    batch, n_in, units, rank, memory = 2, 5, 3, 3, 4
    wf, wt = torch.randn(units * rank, n_in), torch.randn(units * rank, memory)
    bias = torch.randn(units)
    x, state = torch.randn(batch, n_in), torch.randn(batch, units * rank * memory)
    for fuse in (0, 1, 2, 3):
        got_state, got = svdf(x, wf, wt, bias, state, rank, fuse,
                              declared=((batch, units * rank * memory), (batch, units)))
        want_state, want = svdf_formula(x, wf, wt, bias, state, rank, fuse)
        close(got_state.double(), want_state, atol=1e-6, rtol=1e-6)
        close(got.double(), want, atol=2e-5, rtol=1e-5)
    wt1 = torch.randn(units * rank, 1)
    got_state, got = svdf(x, wf, wt1, None, state[:, :units * rank], rank, 0)
    want_state, want = svdf_formula(x, wf, wt1, None, state[:, :units * rank], rank, 0)
    assert got_state.shape == (batch, units * rank) and not got_state.any()
    close(got.double(), want, atol=2e-5, rtol=1e-5)
    h = [t.half() for t in (x, wf, wt, bias, state)]
    got_state, got = svdf(*h, rank, 1, code=T_F16)
    assert got.dtype == torch.float16
    want_state, want = svdf_formula(*h, rank, 1)
    # The state moves, and the new features (weights_feature x, now one step
    # old) are rounded to float16.
    close(got_state.double(), want_state, atol=1e-3, rtol=1e-3)
    close(got.double(), want, atol=1e-2, rtol=4e-3)


def case_svdf_validator_refusals():
    def build(rank=2, fuse=0, state_cols=40, bias_len=2, in_code=T_F32, wt_code=T_F32,
              input_dims=(2, 3), n_inputs=7, out_dims=((0, 0), (0, 0))):
        def b(m):
            ins = [m.input(in_code, input_dims), m.const(T_F32, torch.randn(4, 3)),
                   m.const(wt_code, torch.randn(4, 10).to(DTYPE[wt_code])),
                   m.const(T_F32, torch.randn(bias_len)), m.input(T_F32, (2, state_cols)),
                   m.const(I32, rank), m.const(I32, fuse)]
            code = in_code if in_code in DTYPE else T_F32
            m.op("SVDF", ins[:n_inputs], [m.output(code, d) for d in out_dims])
        return b
    assert not _refused(build())
    assert not _refused(build(out_dims=((2, 40), (2, 2))))
    bad = {"rank 0": build(rank=0),
           "rank 3 not dividing 4 filters": build(rank=3),
           "activation 4": build(fuse=4),
           "state of (memory_size - 1) * filters": build(state_cols=36),
           "bias of the wrong size": build(bias_len=4),
           "TENSOR_INT32 input": build(in_code=T_I32),
           "weights_time float16 with a float32 input": build(wt_code=T_F16),
           "input of rank 3": build(input_dims=(2, 1, 3)),
           "6 inputs": build(n_inputs=6),
           "output declared [2, 4]": build(out_dims=((2, 40), (2, 4)))}
    wrongly_accepted = [what for what, b in bad.items() if not _refused(b)]
    assert not wrongly_accepted, wrongly_accepted


# ------------------------------------------------------ QUANTIZED_16BIT_LSTM

Q8, Q16 = 1 / 128, 1 / 2048  # NeuralNetworks.h's fixed scales (zero points 128, 0)


def qlstm_formula(x, h, c, wx, wh, bias, w_scale, w_zp):
    """NeuralNetworks.h's QUANTIZED_16BIT_LSTM in float64 loops on the real
    values, gates i, f, g, o:
      gate = W [v] + b with v = [x, h] (input then previous output) and the
      gate's weights laid out [recurrent | input], as Android's reference
      QuantizedLSTM.cpp concatenates them (its conformance example agrees);
      i, f, o = sigmoid, g = tanh; c' = f c + i g; h' = o tanh(c').
    The gate sums are held with 12 fractional bits in [-8, 8) and c' with 11
    (16-bit fixed point), tanh(c') takes c' clamped to [-8, 8]. Returns the
    stored values: (c' as QUANT16_SYMM raw, h' as QUANT8_ASYMM)."""
    batch, n_in, n_out = x.shape[0], x.shape[1], h.shape[1]
    c_out = torch.zeros(batch, n_out, dtype=torch.int16)
    h_out = torch.zeros(batch, n_out, dtype=torch.uint8)
    for b in range(batch):
        v = [(float(x[b, d]) - 128) * Q8 for d in range(n_in)]
        v += [(float(h[b, d]) - 128) * Q8 for d in range(n_out)]
        for u in range(n_out):
            gates = []
            for k in range(4):
                row = [float(wh[k][u, d]) for d in range(n_out)]
                row += [float(wx[k][u, d]) for d in range(n_in)]
                acc = sum(vd * (wd - w_zp) * w_scale for vd, wd in zip(v, row))
                acc += float(bias[k][u]) * w_scale / 128
                gates.append(min(max(round(acc * 4096), -32768), 32767) / 4096)
            i, f = 1 / (1 + math.exp(-gates[0])), 1 / (1 + math.exp(-gates[1]))
            g, o = math.tanh(gates[2]), 1 / (1 + math.exp(-gates[3]))
            c_new = f * float(c[b, u]) * Q16 + i * g
            c_raw = min(max(round(c_new / Q16), -32768), 32767)
            h_new = o * math.tanh(min(max(c_raw * Q16, -8.0), 8.0))
            c_out[b, u] = c_raw
            h_out[b, u] = 128 + min(max(round(h_new / Q8), -128), 127)
    return c_out, h_out


def quantized_lstm(x, h, c, wx, wh, bias, w_scale, w_zp, bias_scale=None, x_quant=(Q8, 128),
                   c_scale=Q16, c_code=T_Q16S, drop_last_input=False, x_dims=None, wx_dims=None):
    """Builds QUANTIZED_16BIT_LSTM (the weights and biases constant).
    Returns the model and a function that runs it."""
    m = Model()
    bias_scale = w_scale / 128 if bias_scale is None else bias_scale
    ins = [m.input(T_Q8, x_dims or tuple(x.shape), *x_quant)]
    ins += [m.const(T_Q8, w, dims=wx_dims, scale=w_scale, zp=w_zp) for w in wx]
    ins += [m.const(T_Q8, w, scale=w_scale, zp=w_zp) for w in wh]
    ins += [m.const(T_I32, b_, scale=bias_scale, zp=0) for b_ in bias]
    ins += [m.input(c_code, tuple(c.shape), c_scale, 0), m.input(T_Q8, tuple(h.shape), Q8, 128)]
    outs = [m.output(T_Q16S, (0, 0), Q16, 0), m.output(T_Q8, (0, 0), Q8, 128)]
    m.op("QUANTIZED_16BIT_LSTM", ins[:-1] if drop_last_input else ins, outs)
    return m, lambda: m.run([x, c, h], [torch.int16, torch.uint8])


def u8(values, shape):
    return torch.tensor(values, dtype=torch.uint8).reshape(shape)


# Android's conformance example (runtime/test/specs/V1_2/quantized_lstm.mod.py):
# batch 2, input_size 2, output_size 4, weights scale 0.00408021 zero point 100.
QLSTM_WX = [[146, 250, 235, 171, 10, 218, 171, 108], [24, 50, 132, 179, 158, 110, 3, 169],
            [133, 34, 29, 49, 206, 109, 54, 183], [195, 187, 11, 99, 109, 10, 218, 48]]
QLSTM_WH = [[254, 206, 77, 168, 71, 20, 215, 6, 223, 7, 118, 225, 59, 130, 174, 26],
            [137, 240, 103, 52, 68, 51, 237, 112, 0, 220, 89, 23, 69, 4, 207, 253],
            [172, 60, 205, 65, 14, 0, 140, 168, 240, 223, 133, 56, 142, 64, 246, 216],
            [106, 214, 67, 23, 59, 158, 45, 3, 119, 132, 49, 205, 129, 218, 11, 98]]
QLSTM_BIAS = [[-7876, 13488, -726, 32839], [9206, -46884, -11693, -38724],
              [39481, 48624, 48976, -21419], [-58999, -17050, -41852, -40538]]


def qlstm_conformance_operands():
    x = u8([166, 179, 50, 150], (2, 2))
    h = u8([136, 150, 140, 115, 135, 152, 138, 112], (2, 4))
    c = torch.tensor([876, 1034, 955, -909, 761, 1029, 796, -1036], dtype=torch.int16).reshape(2, 4)
    wx = [u8(w, (4, 2)) for w in QLSTM_WX]
    wh = [u8(w, (4, 4)) for w in QLSTM_WH]
    bias = [torch.tensor(b_, dtype=torch.int32) for b_ in QLSTM_BIAS]
    return x, h, c, wx, wh, bias


def case_quantized_16bit_lstm_conformance():
    # Android's expected values come from its fixed-point reference (gemmlowp
    # sigmoid and tanh); NNAPI allows one quantum. The output matches exactly,
    # the cell state within one quantum (3 of 8 values differ by one: float
    # sigmoid/tanh against gemmlowp's 16-bit ones).
    x, h, c, wx, wh, bias = qlstm_conformance_operands()
    c_got, h_got = quantized_lstm(x, h, c, wx, wh, bias, 0.00408021, 100)[1]()
    want_c = torch.tensor([1485, 1177, 1373, -1023, 1019, 1355, 1097, -1235]).reshape(2, 4)
    want_h = torch.tensor([140, 151, 146, 112, 136, 156, 142, 112]).reshape(2, 4)
    assert c_got.dtype == torch.int16 and h_got.dtype == torch.uint8
    assert (c_got.int() - want_c).abs().max() <= 1, c_got
    assert (h_got.int() - want_h).abs().max() <= 1, h_got
    c_f, h_f = qlstm_formula(x, h, c, wx, wh, bias, 0.00408021, 100)
    assert (c_f.int() - want_c).abs().max() <= 1 and (h_f.int() - want_h).abs().max() <= 1
    assert torch.equal(c_got, c_f) and torch.equal(h_got, h_f), (c_got, c_f, h_got, h_f)


def case_quantized_16bit_lstm_formula():
    # Random operands, input_size 3 != output_size 5 and equal sizes (4, 4),
    # three steps with the state fed back: the formula's stored values, to
    # one quantum (the rounding of the gate sums may differ at ties).
    torch.manual_seed(41)
    for n_in, n_out, w_scale, w_zp in ((3, 5, 0.01, 120), (4, 4, 0.02, 128)):
        wx = [torch.randint(0, 256, (n_out, n_in), dtype=torch.uint8) for _ in range(4)]
        wh = [torch.randint(0, 256, (n_out, n_out), dtype=torch.uint8) for _ in range(4)]
        bias = [torch.randint(-20000, 20000, (n_out,), dtype=torch.int32) for _ in range(4)]
        h = torch.randint(0, 256, (2, n_out), dtype=torch.uint8)
        c = torch.randint(-6000, 6000, (2, n_out), dtype=torch.int16)
        for step in range(3):
            x = torch.randint(0, 256, (2, n_in), dtype=torch.uint8)
            c_got, h_got = quantized_lstm(x, h, c, wx, wh, bias, w_scale, w_zp)[1]()
            c_want, h_want = qlstm_formula(x, h, c, wx, wh, bias, w_scale, w_zp)
            assert (c_got.int() - c_want.int()).abs().max() <= 1, (step, c_got, c_want)
            assert (h_got.int() - h_want.int()).abs().max() <= 1, (step, h_got, h_want)
            assert (h_want != 128).any() and (c_want != 0).any()
            c, h = c_got, h_got


def case_quantized_16bit_lstm_validator_refusals():
    x, h, c, wx, wh, bias = qlstm_conformance_operands()

    def refused(kw):
        try:
            m, _ = quantized_lstm(x, h, c, wx, wh, bias, 0.00408021, 100, **kw)
        except RuntimeError:
            return True  # addOperation refused
        a, o = m.inputs, m.outputs
        lib.ANeuralNetworksModel_identifyInputsAndOutputs(
            m.handle, len(a), u32_array(a), len(o), u32_array(o))
        result = lib.ANeuralNetworksModel_finish(m.handle)
        lib.ANeuralNetworksModel_free(m.handle)
        return result != 0
    assert not refused({})
    bad = {"input zero point 127": dict(x_quant=(Q8, 127)),
           "input scale 1/256": dict(x_quant=(1 / 256, 128)),
           "cell state scale 2^-10": dict(c_scale=1 / 1024),
           "bias scale not weights_scale / 128": dict(bias_scale=0.00408021 / 64),
           "14 inputs": dict(drop_last_input=True),
           "cell state TENSOR_QUANT16_ASYMM": dict(c_code=12),
           "input of rank 3": dict(x_dims=(2, 1, 2)),
           "input weights of the wrong width": dict(wx_dims=(2, 4))}
    wrongly_accepted = [what for what, kw in bad.items() if not refused(kw)]
    assert not wrongly_accepted, wrongly_accepted


CASES = [v for k, v in list(globals().items()) if k.startswith("case_")]

if __name__ == "__main__":
    sys.exit(run_cases(CASES))
