#!/usr/bin/env python3
"""Mutation check of the test suite (issues 25 and 35): plants deliberate
bugs ("mutants") in a scratch copy of the tree, one at a time, rebuilds what
changed, and runs the one test each mutant declares must catch it.

    /usr/bin/python3 tools/mutation_check.py [--build build] [--only REGEX]
        [--sample] [--check-texts] [--list] [--jobs 2] [--table FILE]

Each mutant (MUTANTS below) is an exact text replacement in one or more
files, which must occur exactly once, and declares its catch: a ctest name,
optionally one case of it (a gtest filter, passed as GTEST_FILTER; or a regex
on the case functions of a Python runner, passed as NNAPI_TEST_CASES), and a
regex the failing test's output must match. Per mutant the tool

  1. builds the unmutated scratch tree and runs the declared test there: it
     must pass, with at least one case run (else: an error of the tool);
  2. plants the mutant (its text must occur exactly once, else: an error) and
     builds the targets the test needs (a mutant that does not build is an
     error, never a catch);
  3. runs the test: the mutant is CAUGHT only when ctest reports that test
     "Failed" (not a timeout, a crash or "Not Run") and its output matches
     the declared regex; any other outcome is NOT CAUGHT, with the reason;
  4. restores the file(s).

Exit status: 0 when every selected mutant was caught as declared, 1 when
some were not caught, 2 on an error of the tool or of a mutant (a text that
no longer applies, a mutant that does not build, a baseline that fails).

--check-texts only checks, in the working tree and without building, that
every mutant's text occurs exactly once and that its declared test exists
(with --build: in that build's `ctest -N`), in seconds (ctest
mutation.texts). --sample runs the fixed sample of fast mutants (SAMPLE; ctest
mutation.sample). --list prints the mutants.

--build names the project's build tree; its generated fixtures (BUILD/fixtures,
or --fixtures DIR) are linked into the scratch build, not made again (generate
the ones the selected mutants need first: ctest's fixture setups, or
tools/make_fixtures.py DIR --only REGEX). The scratch copy is --tree
(default BUILD-mutation/tree): the tracked files of the working tree, copied
where they differ, configured and built in TREE/build. CMakeLists.txt gives
ccache paths relative to the source tree, so the copy's objects come from the
cache of the live build (a first build of the copy takes about a minute; each
mutant recompiles the files it touches).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The targets each ctest test needs (regex on the test's name -> targets).
TEST_TARGETS = [
    (r"reference\.", ["test_reference", "neuralnetworks"]),
    (r"verify\.(test_nnapi|torchvision)", ["test_verify", "neuralnetworks"]),
    (r"verify\.rules", ["test_verify_rules", "neuralnetworks"]),
    (r"verify\.lowerings", ["test_lowerings", "neuralnetworks"]),
    (r"verify\.cli_", ["nnapi-convert", "neuralnetworks"]),
    (r"runtime\.", ["neuralnetworks"]),
    (r"validate\.", ["test_validate"]),
    (r"(cli|models|opspace)\.", ["nnapi-convert", "neuralnetworks"]),
    (r"unit\.(numeric_rules|zoo_rule)", []),
    (r"docs\.signature_calls", []),
]


class Mutant:
    """A planted bug: `edits` [(file, text, replacement)], each text occurring
    exactly once; `test` the ctest name that must catch it, `case` one case of
    it (gtest filter or Python case regex; None: the whole test) and `regex`
    what its failing output must match."""

    def __init__(self, name, area, what, edits, test, case, regex):
        self.name, self.area, self.what, self.edits = name, area, what, edits
        self.test, self.case, self.regex = test, case, regex

    @property
    def files(self):
        return sorted({f for f, _, _ in self.edits})


M = Mutant
# Numeric mismatch as --verify's compare_output words it.
DIFFER = r"elements differ by more than atol \+ rtol"
# test_validate's expect_one when the validator found nothing in a broken blob.
NOTHING_FOUND = r"findings.size\(\)\s+Which is: 0"
MUTANTS = [
    # ---- --fuse-activations (src/lower/context.cpp)
    M("fuse-relu6-as-relu", "converter",
      "--fuse-activations folds hardtanh(0, 6) (nn.ReLU6) as RELU: the clamp at 6 is lost",
      [("src/lower/context.cpp", "if (l == 0 && h == 6) fuse = Fuse::Relu6;",
        "if (l == 0 && h == 6) fuse = Fuse::Relu;")],
      "verify.test_nnapi_fused", "Verify.fuse_linear_relu6", r"fuse code|" + DIFFER),
    M("fuse-relu1-as-relu6", "converter",
      "--fuse-activations folds hardtanh(-1, 1) with RELU6's code instead of RELU1's",
      [("src/lower/context.cpp", "if (l == -1 && h == 1) fuse = Fuse::Relu1;",
        "if (l == -1 && h == 1) fuse = Fuse::Relu6;")],
      "verify.test_nnapi_fused", "Verify.fuse_linear_relu1", r"fuse code|" + DIFFER),
    M("fuse-not-only-use", "converter",
      "--fuse-activations folds an activation whose input has other uses too",
      [("src/lower/context.cpp", "v->uses().size() != 1) return Fuse::None;",
        "v->uses().empty()) return Fuse::None;")],
      "verify.test_nnapi_fused", "Verify.fuse_conv_two_uses", r"fuse|" + DIFFER),
    # ---- lowerings the byte-exact reference pins
    M("dropped-transpose", "converter",
      "a permute that needs a TRANSPOSE reads the data in place with the permuted shape",
      [("src/lower/layout.cpp", "  transpose({in_id, in}, out_value);\n}",
        "  Operand o = in.with_shape(out_shape);\n  o.dim_order = DimOrder::Contiguous;\n"
        "  cx.reinterpret(out_value, in_id, o);\n}")],
      "reference.test_nnapi", "Reference.beyond_reshape_as_movedim",
      r"must convert was refused: .*break NeuralNetworks.h's rules"),
    M("padding-off-by-one", "converter",
      "convolutions and pools pad one column more on the right than PyTorch does",
      [("src/lower/conv_pool.cpp", "  a.pad_l = a.pad_r = paddings[1];",
        "  a.pad_l = paddings[1];\n  a.pad_r = paddings[1] + (paddings[1] > 0 ? 1 : 0);")],
      "reference.test_nnapi", "Reference.conv2d_float_3x3p1",
      r"ser_model: (first difference|length differs)"),
    M("ceil-mode-ignored", "converter",
      "max_pool2d's ceil_mode is ignored (the reference's googlenet bug: 55x55 instead of 56x56)",
      [("src/lower/conv_pool.cpp",
        "  a->pad_b += extra(image[2], a->kernel_h, a->stride_h, a->pad_t);\n"
        "  a->pad_r += extra(image[3], a->kernel_w, a->stride_w, a->pad_l);",
        "  (void)image;\n  (void)extra;")],
      "reference.torchvision", "Reference.tv_googlenet*", r"shape .* differs|identical to the reference"),
    M("quant-hardswish-scale", "converter",
      "quantized::hardswish (API 30) declares an output scale 0.4% off the model's",
      [("src/lower/activation.cpp",
        "  emit_unary(cx, Op::HardSwish, x, node->output(), out_quant);",
        "  emit_unary(cx, Op::HardSwish, x, node->output(),\n"
        "             QuantParams{out_quant.scale * 1.004, out_quant.zero_point});")],
      "reference.test_nnapi", "Reference.beyond_hardswish_api30_quant",
      r"quantized with scale [0-9.e-]+, zero point \d+, but the model's output has scale"),
    M("quant-conv-output-scale", "converter",
      "quantized convolutions declare an output scale 0.4% off the model's",
      [("src/lower/quantized.cpp",
        "y = emit_conv2d(cx, out, out_scale, out_zero_point, image, weight, bias_id, a, transpose, fuse);",
        "y = emit_conv2d(cx, out, out_scale * 1.004, out_zero_point, image, weight, bias_id, a, "
        "transpose, fuse);")],
      "reference.test_nnapi", "Reference.conv2d_quant_3x3", r"ser_model: first difference"),
    M("channel-shuffle-shared-misreading", "converter+runtime",
      "converter and runtime both read CHANNEL_SHUFFLE's num_groups as the group size "
      "(their results agree with eager; NeuralNetworks.h disagrees)",
      [("src/lower/layout.cpp",
        "m.add_int_scalar(static_cast<int32_t>(split[1].value));",
        "m.add_int_scalar(static_cast<int32_t>(split[2].value));"),
       ("src/runtime/ops/shape.cpp",
        "  split[static_cast<size_t>(axis)] = c / groups;\n"
        "  split.insert(split.begin() + axis, groups);",
        "  split[static_cast<size_t>(axis)] = groups;\n"
        "  split.insert(split.begin() + axis, c / groups);")],
      "runtime.extra_ops", "case_channel_shuffle", r"FAIL case_channel_shuffle"),
    # ---- lowerings beyond the reference (the host runtime against eager is the oracle)
    M("movedim-inverse-permutation", "lowering",
      "aten::movedim permutes by the inverse of PyTorch's permutation",
      [("src/lower/layout.cpp", "  permute_value(cx, node->output(), node->input(0), perm);\n}",
        "  std::vector<int64_t> inverse(rank);\n"
        "  for (int64_t i = 0; i < rank; ++i) inverse[perm[i]] = i;\n"
        "  permute_value(cx, node->output(), node->input(0), inverse);\n}")],
      "reference.test_nnapi", "Reference.beyond_reshape_as_movedim", r"shape .* differs|" + DIFFER),
    M("qmean-innermost-one-mean", "lowering",
      "a quantized mean over the innermost dims is one quant8 MEAN (the reference's rounding) "
      "instead of MEAN of the stored values, QUANTIZE at scale 1 and CAST",
      [("src/lower/reduction.cpp", "  return QuantMean::Innermost;\n",
        "  return QuantMean::OneMean;\n")],
      "reference.test_nnapi", "Reference.beyond_qmean_dimm1_nchw", r"off by one quantum|identical to the reference"),
    M("qmean-requantize-zero-point", "lowering",
      "the quantized mean's final CAST declares the output zero point one above the input's",
      [("src/lower/reduction.cpp", "  requantized.zero_point = in.zero_point;\n",
        "  requantized.zero_point = in.zero_point + 1;\n")],
      "reference.test_nnapi", "Reference.beyond_qmean_dimm1_nchw", r"zero point"),
    M("video-conv3d-time-dilation", "lowering",
      "conv3d ignores its time dilation (taps consecutive frames)",
      [("src/lower/video.cpp", "take_steps(cx, x, k * w.dilation, out_t, w.stride)",
        "take_steps(cx, x, k, out_t, w.stride)")],
      "reference.test_nnapi", "Reference.beyond_video_conv3d_dilated", DIFFER),
    M("video-pool3d-ceil-ignored", "lowering",
      "max_pool3d/avg_pool3d ignore ceil_mode in the pooled length",
      [("src/lower/video.cpp", "int64_t out = (in + 2 * pad - k + (ceil_mode ? s - 1 : 0)) / s + 1;",
        "int64_t out = (in + 2 * pad - k) / s + 1;")],
      "reference.test_nnapi", "Reference.beyond_video_max_pool3d_ceil", r"shape .* differs|" + DIFFER),
    M("expand-load-time-keeps-1", "lowering",
      "a computed tensor expanded to a load-time batch keeps its size-1 dim in the declared shape",
      [("src/lower/tile.cpp", "      repeats_to_load_time = true;\n      target[d] = t;\n",
        "      repeats_to_load_time = true;\n")],
      "reference.test_nnapi", "Reference.beyond_cls_token_flex_batch_computed_b",
      r"must convert was refused: .*internal: emit_expand bound to a value when nothing is "
      r"broadcast"),
    M("bool-cat-reversed", "lowering",
      "aten::cat of bools (moved through float32) joins its parts last first (until issue 35's "
      "first run this mutant sat in emit_concat's int32 path, which aten::cat does not take: "
      "not caught)",
      [("src/lower/slicing.cpp", "                 return emit_concat(cx, nchw, axis, out);",
        "                 return emit_concat(cx, {nchw.back(), nchw.front()}, axis, out);")],
      "reference.test_nnapi", "Reference.beyond_bool_join_cat", r"integer values differ|differ"),
    M("roll-direction", "lowering",
      "aten::roll moves elements the other way (head before tail)",
      [("src/lower/roll.cpp", "x = emit_concat(cx, {tail, head}, d,",
        "x = emit_concat(cx, {head, tail}, d,")],
      "reference.test_nnapi", "Reference.beyond_roll_1d", DIFFER),
    M("attention-scale-1-over-d", "lowering",
      "the fused self-attention (native multi-head attention, the transformer fast path) scales q "
      "by 1/D instead of 1/sqrt(D) (nn.MultiheadAttention traced decomposes into other nodes: "
      "beyond-attention-mha does not reach it)",
      [("src/lower/attention.cpp", "float_scalar_tensor(cx, 1.0f / std::sqrt(float(d)))",
        "float_scalar_tensor(cx, 1.0f / float(d))")],
      "reference.test_nnapi", "Reference.beyond_attention_native_mha_flex_batch", DIFFER),
    M("lstm-gates-g-o-swapped", "lowering",
      "the LSTM lowering reads the cell gate g and the output gate o from each other's rows",
      [("src/lower/recurrent.cpp",
        "OperandHandle i = gate(0, Op::Logistic), g = gate(2, Op::Tanh), o = gate(3, Op::Logistic);",
        "OperandHandle i = gate(0, Op::Logistic), g = gate(3, Op::Tanh), o = gate(2, Op::Logistic);")],
      "reference.test_nnapi", "Reference.beyond_lstm_1layer_batch_first", DIFFER),
    M("gru-first-step-ignores-z", "lowering",
      "the GRU's first step (zero state) forgets the update gate: h = n instead of (1 - z) n",
      [("src/lower/recurrent.cpp",
        "            : emit_binary(cx, Op::Sub, n, emit_binary(cx, Op::Mul, z, n));",
        "            : n;")],
      "reference.test_nnapi", "Reference.beyond_gru_1layer_batch_first", DIFFER),
    M("gelu-erf-p-coefficient", "lowering",
      "gelu's erf polynomial takes p = 0.3275 instead of A&S 7.1.26's 0.3275911 (an error "
      "within --verify's 1e-4, past the documented 1.5e-7)",
      [("src/lower/activation.cpp", "const float p = 0.3275911f;", "const float p = 0.3275f;")],
      "verify.lowerings", "Lowerings.GeluErfDenseGrid", DIFFER),
    # ---- the host runtime (src/runtime)
    M("runtime-relu1-as-0-1", "runtime",
      "the host runtime clamps a float FUSED_RELU1 result to [0, 1] instead of [-1, 1]",
      [("src/runtime/kernel.cpp", "r = at::clamp(r, -1, 1);", "r = at::clamp(r, 0, 1);")],
      "runtime.extra_ops", "case_fused_relu1", r"FAIL case_fused_relu1"),
    M("runtime-cast-rounds", "runtime",
      "CAST float32 -> int32 rounds to nearest instead of truncating toward zero",
      [("src/runtime/ops/quant.cpp",
        "t = at::trunc(t.to(at::kDouble)).clamp(INT32_MIN, INT32_MAX);",
        "t = at::round(t.to(at::kDouble)).clamp(INT32_MIN, INT32_MAX);")],
      "runtime.extra_ops", "case_cast", r"FAIL case_cast\w*: AssertionError"),
    M("runtime-cast-quant8-wraps", "runtime",
      "CAST to TENSOR_QUANT8_ASYMM wraps out-of-range values instead of saturating",
      [("src/runtime/ops/quant.cpp", "t = at::trunc(t.to(at::kDouble)).clamp(0, 255);",
        "t = at::trunc(t.to(at::kDouble)).to(at::kLong).remainder(256);")],
      "runtime.extra_ops", "case_cast", r"FAIL case_cast\w*: AssertionError"),
    M("runtime-lrn-alpha-per-window", "runtime",
      "LOCAL_RESPONSE_NORMALIZATION divides alpha by the window size (Caffe's convention, "
      "not NeuralNetworks.h's)",
      [("src/runtime/ops/normalization.cpp", "at::pow(sums * alpha + bias, beta)",
        "at::pow(sums * alpha / static_cast<double>(2 * radius + 1) + bias, beta)")],
      "runtime.spec_ops", "case_local_response_normalization",
      r"FAIL case_local_response_normalization"),
    M("runtime-lstm-peephole-old-cell", "runtime",
      "the LSTM's output-gate peephole reads the previous cell state instead of the new one",
      [("src/runtime/ops/recurrent.cpp", "at::Tensor o = at::sigmoid(gate(3, c));",
        "at::Tensor o = at::sigmoid(gate(3, s.c));")],
      "runtime.recurrent_ops", "case_sequence_lstm_every_option",
      r"FAIL case_sequence_lstm_every_option"),
    M("quant16-asymm-signed", "runtime",
      "the host runtime reads TENSOR_QUANT16_ASYMM as signed: boxes beyond 4096 turn negative",
      [("src/runtime/kernel.cpp", "return stored.to(at::kInt).bitwise_and(0xFFFF);",
        "return stored.to(at::kInt);")],
      "runtime.detection_ops", None, r"FAIL case_\w+"),
    M("roi-align-sample-offset", "runtime",
      "ROI_ALIGN samples each bin's rows a quarter step in instead of at the sub-bin centres",
      [("src/runtime/ops/detection.cpp", "step_h * (static_cast<float>(si) + 0.5f)",
        "step_h * (static_cast<float>(si) + 0.25f)")],
      "runtime.detection_ops", "case_roi_align_(android|formula)", r"FAIL case_roi_align"),
    M("nms-linear-kernel-halved", "runtime",
      "BOX_WITH_NMS_LIMIT's linear kernel multiplies by 1 - IoU / 2 instead of 1 - IoU",
      [("src/runtime/ops/detection.cpp", "return kernel == 0 ? 0.0f : 1.0f - overlap;",
        "return kernel == 0 ? 0.0f : 1.0f - overlap * 0.5f;")],
      "runtime.detection_ops", "case_box_with_nms_limit", r"FAIL case_box_with_nms_limit"),
    M("heatmap-clamped-border", "runtime",
      "HEATMAP_MAX_KEYPOINT clamps its 3x3 neighbourhood at the border instead of mirroring it",
      [("src/runtime/ops/detection.cpp", "return k < 0 ? 1 : (k >= size ? size - 2 : k);",
        "return k < 0 ? 0 : (k >= size ? size - 1 : k);")],
      "runtime.detection_ops", "case_heatmap_max_keypoint", r"FAIL case_heatmap_max_keypoint"),
    # ---- the validator (src/validate)
    M("validator-elementwise-rank5", "validator",
      "the shared validator lets ADD/SUB/MUL/DIV operands of rank 5 through "
      "(NeuralNetworks.h: rank up to 4)",
      [("src/validate/ops_elementwise.cpp",
        "  c.max_rank(4);\n  if (!c.full()) return;\n  c.fuse_code(fuse_at);",
        "  c.max_rank(5);\n  if (!c.full()) return;\n  c.fuse_code(fuse_at);")],
      "validate.rules", "Validate.MulOfRank5IsRefused",
      r"expected \"input 0 has rank 5; NNAPI's MUL takes tensors of rank 1 to 4\" in"),
    M("validator-softmax-beta-zero", "validator",
      "the validator accepts SOFTMAX's beta 0 (NeuralNetworks.h: beta > 0)",
      [("src/validate/ops_elementwise.cpp", "if (auto b = c.f32(i); b && !(*b > 0.0f))",
        "if (auto b = c.f32(i); b && !(*b >= 0.0f))")],
      "validate.rules", "Validate.SoftmaxBetaNotPositiveIsRefused", NOTHING_FOUND),
    M("validator-broadcast-unchecked", "validator",
      "the validator lets binary operands of unequal non-1 dims through (no broadcast check)",
      [("src/validate/rule_context.cpp", "    } else if (x != y) {\n      c.fail(Rule::Shape, \"inputs of shapes \"",
        "    } else if (false) {\n      c.fail(Rule::Shape, \"inputs of shapes \"")],
      "validate.rules", "Validate.InputsThatDoNotBroadcastAreRefused", NOTHING_FOUND),
    M("validator-moves-requantize", "validator",
      "the validator lets a data move (TRANSPOSE, GATHER, SLICE, SPLIT, ...) declare another "
      "output scale than its input's",
      [("src/validate/ops_shape.cpp", "    c.output_same_type(o, 0);\n    c.same_quant(o, 0);\n",
        "    c.output_same_type(o, 0);\n")],
      "runtime.extra_ops", "case_quant8_transpose", r"accepted another output scale"),
    M("validator-box-quant-ignored", "validator",
      "the validator accepts TENSOR_QUANT16_ASYMM boxes of any scale and zero point",
      [("src/validate/ops_detection.cpp", "if (o.scale != kBoxScale || o.zero_point != 0)",
        "if (false)")],
      "runtime.detection_ops", None, r"FAIL case_\w+"),
    # ---- the writer (src/serialize)
    M("writer-operand-zero-point", "writer",
      "the blob writer stores every operand's zero point as 0",
      [("src/serialize/model_builder.cpp", "    w.f32(o.scale);\n    w.i32(o.zero_point);\n",
        "    w.f32(o.scale);\n    w.i32(0);\n")],
      "reference.test_nnapi", "Reference.conv2d_quant_3x3", r"ser_model: first difference"),
    M("writer-preference-dropped", "writer",
      "the module writer stores compilation_preference 0 (FAST_SINGLE_ANSWER... as LOW_POWER) "
      "whatever --preference says",
      [("src/serialize/module_writer.cpp", "int64_t{options.compilation_preference});",
        "int64_t{0});")],
      "reference.test_nnapi", "Reference.opt_preference_*", r"attribute compilation_preference"),
    # ---- batch and report code (src/core)
    M("junit-failures-uncounted", "batch/report",
      "--junit reports failures=\"0\" whatever failed",
      [("src/pipeline/reports.cpp", "    failures += !r.ok;\n", "    failures += 0;\n")],
      "cli.ux", None, r"junit testsuite: tests=2 failures=0, want tests=2 failures=1"),
    M("check-dot-all-green", "batch/report",
      "check --dot colours every supported node of a converting model as lowered to NNAPI, "
      "those with no NNAPI operation too",
      [("src/core/check_graph.cpp",
        "n.verdict = n.operations > 0 ? CheckNode::Verdict::Nnapi : CheckNode::Verdict::Folded;",
        "n.verdict = CheckNode::Verdict::Nnapi;")],
      "cli.check_dot", None, r"FAILED: converts: n3 \(aten::size\) is green with its operations"),
    # ---- --verify's rules (src/verify)
    M("verify-ignores-two-quanta", "verify",
      "--verify's quantized rule forgets the bound on the worst element (only the 3% share)",
      [("src/verify/verify.cpp",
        "    return c.max_quanta <= 1 && static_cast<double>(c.off_by_one) <=",
        "    return static_cast<double>(c.off_by_one) <=")],
      "verify.rules", "VerifyRules.QuantizedTwoQuantaFails", r"Failure"),
    M("verify-ignores-share", "verify",
      "--verify's quantized rule forgets the 3% share (any number of elements off by one passes)",
      [("src/verify/verify.cpp", "options.max_off_by_one_share * static_cast<double>(c.numel);",
        "static_cast<double>(c.numel);")],
      "verify.cli_quant_5pct", None, r"expected exit 1|exit"),
    M("verify-ignores-scale", "verify",
      "--verify's quantized rule compares the output's zero point but not its scale",
      [("src/verify/verify.cpp",
        "if (nnapi.q_scale() != eager.q_scale() || nnapi.q_zero_point() != eager.q_zero_point()) {",
        "if (nnapi.q_zero_point() != eager.q_zero_point()) {")],
      "verify.rules", "VerifyRules.QuantizedScaleOrZeroPointFails", r"Failure"),
    M("verify-strict-ignored", "verify",
      "--verify-strict lets a check that proves little pass (exit 0)",
      [("src/verify/verify.cpp", "    if (verify.strict && !c.warning.empty()) {",
        "    if (false && !c.warning.empty()) {")],
      "cli.ux", None, r"FAILED: --verify-strict fails it"),
    # ---- the Python checkers' rule and its callers
    M("python-rule-ignores-worst", "rule",
      "tools/numeric_rules.py forgets the bound on the worst element",
      [("tools/numeric_rules.py", "    if worst > 1:\n", "    if False:\n")],
      "unit.numeric_rules", None, r"FAIL: test_one_element_two_quanta_off_fails"),
    M("python-rule-ignores-share", "rule",
      "tools/numeric_rules.py forgets the 3% share",
      [("tools/numeric_rules.py", "    if off > allowed:\n", "    if False:\n")],
      "unit.numeric_rules", None, r"FAIL: test_four_percent_off_by_one_fails"),
    M("zoo-float-verdict-always-ok", "rule caller",
      "the zoo's float verdict passes whatever allclose says (its use of the rule is lost)",
      [("tools/model_zoo.py", "ok = res[\"allclose\"]\n", "ok = res[\"allclose\"] or True\n")],
      "unit.numeric_rules", None, r"FAIL: test_zoo_float_past_rule_fails"),
    # ---- operand positions from the signature table (src/nnapi/op_signature.cpp)
    M("flatten-positional-reshape", "signature",
      "flatten's RESHAPE lists its operands again instead of naming their roles",
      [("src/lower/view.cpp", "  add_reshape(cx.model(), in_id, target_id, out_id);",
        "  cx.model().add_operation(Op::Reshape, {in_id, target_id}, {out_id});")],
      "docs.signature_calls", None, r"view\.cpp:[0-9]+: add_operation\(Op::Reshape"),
]

# The fixed sample ctest mutation.sample runs: fast to rebuild and to test
# (the validator has no LibTorch; the Python rule and the zoo need no build).
SAMPLE = ["python-rule-ignores-worst", "zoo-float-verdict-always-ok", "validator-softmax-beta-zero",
          "validator-elementwise-rank5", "runtime-relu1-as-0-1", "nms-linear-kernel-halved"]


def log(msg):
    print(msg, flush=True)


def sh(cmd, cwd=None, env=None):
    """Runs `cmd`; returns (status, combined output)."""
    p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, errors="replace")
    return p.returncode, p.stdout


def git(*args):
    return subprocess.run(["git", *args], cwd=ROOT, check=True, stdout=subprocess.PIPE).stdout


class ToolError(Exception):
    """An error of the tool or of a mutant: never a catch."""


def sync_tree(tree):
    """Copies the working tree's tracked files into `tree` where they differ."""
    copied = 0
    for f in filter(None, git("ls-files", "-z").decode().split("\0")):
        src, dst = os.path.join(ROOT, f), os.path.join(tree, f)
        if not os.path.isfile(src):
            continue
        with open(src, "rb") as a:
            data = a.read()
        if os.path.exists(dst):
            with open(dst, "rb") as b:
                if b.read() == data:
                    continue
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "wb") as b:
            b.write(data)
        shutil.copymode(src, dst)
        copied += 1
    return copied


def targets_for(test):
    for pattern, targets in TEST_TARGETS:
        if re.match(pattern, test):
            return targets
    raise ToolError(f"no build targets known for test {test} (add it to TEST_TARGETS)")


def build(bdir, jobs, targets):
    if not targets:
        return
    status, out = sh(["cmake", "--build", bdir, "-j", str(jobs), "--target"] + targets)
    if status != 0:
        raise ToolError("build failed:\n" + "\n".join(out.splitlines()[-30:]))


def apply(tree, m):
    """Plants mutant `m`; returns the original contents to restore."""
    saved = {}
    for f, old, new in m.edits:
        p = os.path.join(tree, f)
        if p not in saved:
            with open(p) as fh:
                saved[p] = fh.read()
        with open(p) as fh:
            current = fh.read()
        n = current.count(old)
        if n != 1:
            restore(saved)
            raise ToolError(f"{m.name}: its text occurs {n} times in {f} (must be once): {old!r}")
        with open(p, "w") as fh:
            fh.write(current.replace(old, new))
    return saved


def restore(saved):
    for p, text in saved.items():
        with open(p, "w") as fh:
            fh.write(text)


def cases_run(out):
    """How many cases the test's output says ran (gtest or run_cases)."""
    n = [int(x) for x in re.findall(r"\[==========\] (\d+) tests? from \d+ test (?:suite|case)s? ran",
                                    out)]
    n += [int(a) + int(b) for a, b in re.findall(r"(\d+) passed, (\d+) failed", out)]
    n += [int(x) for x in re.findall(r"^Ran (\d+) tests? in", out, re.M)]
    return max(n) if n else None


def run_test(bdir, m, timeout):
    """Runs m's test (only its case). Returns (status word, output): "Passed",
    "Failed", or what else ctest says (Timeout, Not Run, SEGFAULT, ...)."""
    env = dict(os.environ)
    env.pop("GTEST_FILTER", None)
    env.pop("NNAPI_TEST_CASES", None)
    if m.case:
        env["GTEST_FILTER" if re.match(r"^[A-Z]\w*\.", m.case) else "NNAPI_TEST_CASES"] = m.case
    status, out = sh(["ctest", "-R", "^" + re.escape(m.test) + "$", "-V", "--fixture-exclude-setup",
                      ".*", "--timeout", str(timeout)], cwd=bdir, env=env)
    # "1/1 Test #33: cli.ux ....***Failed  Required regular expression not found. Regex=[...",
    # "...   Passed    3.2 sec", "***Timeout", "***Not Run", "***Exception: SegFault"
    line = re.search(r"Test\s+#\d+: " + re.escape(m.test) +
                     r" \.*\s*(\*{3})?(Passed|Failed|Not Run|Timeout|Exception[^\n]*|\S+)", out)
    if not line:
        if re.search(r"No tests were found", out):
            raise ToolError(f"{m.name}: ctest has no test {m.test}")
        return "no result", out
    word = line.group(2).strip()
    out = re.sub(r"^\d+: ", "", out, flags=re.M)  # ctest -V's test-number prefixes
    return ("Passed" if word.startswith("Passed") else
            "Failed" if word.startswith("Failed") else word), out


def baseline(bdir, m, timeout):
    """m's test passes on the unmutated tree with at least one case run
    (twice at most: a failure is re-run once to tell a flaky test)."""
    for attempt in range(2):
        word, out = run_test(bdir, m, timeout)
        if word == "Passed":
            n = cases_run(out)
            if n == 0:
                raise ToolError(f"{m.name}: {m.test} ({m.case}) runs no case on the unmutated tree")
            return
    raise ToolError(f"{m.name}: {m.test} ({m.case}) does not pass on the unmutated tree "
                    f"({word}):\n" + out[-2000:])


def check_mutant(tree, bdir, m, jobs, timeout):
    """Returns (caught, why)."""
    targets = targets_for(m.test)
    build(bdir, jobs, targets)
    baseline(bdir, m, timeout)
    saved = apply(tree, m)
    try:
        try:
            build(bdir, jobs, targets)
        except ToolError as e:
            raise ToolError(f"{m.name}: the mutant does not build: {e}")
        word, out = run_test(bdir, m, timeout)
    finally:
        restore(saved)
    logs = os.path.join(os.path.dirname(tree), "logs")
    os.makedirs(logs, exist_ok=True)
    with open(os.path.join(logs, m.name + ".txt"), "w") as f:
        f.write(out)  # the mutant's test output, for a catch that does not match
    if word != "Passed" and word != "Failed":
        return False, f"{m.test} ended '{word}', not Failed"
    if word == "Passed":
        return False, f"{m.test} passed"
    hit = re.search(m.regex, out)
    if not hit:
        return False, (f"{m.test} failed, but its output does not match /{m.regex}/ (output: "
                       f"{os.path.join(logs, m.name + '.txt')})")
    return True, hit.group(0).replace(tree + "/", "").replace(ROOT + "/", "")[:80]


def check_texts(build_dir):
    """Every mutant's text occurs once in the working tree; every declared
    test exists (in build_dir's ctest -N, when given). Returns the problems."""
    problems = []
    names = None
    if build_dir and os.path.exists(os.path.join(build_dir, "CTestTestfile.cmake")):
        _, out = sh(["ctest", "-N"], cwd=build_dir)
        names = set(re.findall(r"Test\s+#\d+: (\S+)", out))
    seen = set()
    for m in MUTANTS:
        if m.name in seen:
            problems.append(f"{m.name}: two mutants of that name")
        seen.add(m.name)
        for f, old, new in m.edits:
            p = os.path.join(ROOT, f)
            n = open(p).read().count(old) if os.path.exists(p) else 0
            if n != 1:
                problems.append(f"{m.name}: its text occurs {n} times in {f} (must be once)")
            if old == new:
                problems.append(f"{m.name}: its replacement in {f} changes nothing")
        try:
            re.compile(m.regex)
        except re.error as e:
            problems.append(f"{m.name}: bad regex: {e}")
        if names is not None and m.test not in names:
            problems.append(f"{m.name}: no ctest test {m.test}")
        try:
            targets_for(m.test)
        except ToolError as e:
            problems.append(f"{m.name}: {e}")
    for s in SAMPLE:
        if s not in seen:
            problems.append(f"SAMPLE names {s}, which is no mutant")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--fixtures", help="generated fixtures (default BUILD/fixtures)")
    ap.add_argument("--tree", help="scratch copy (default BUILD-mutation/tree)")
    ap.add_argument("--only", help="regex on the mutants' names")
    ap.add_argument("--sample", action="store_true", help="only the fixed sample (SAMPLE)")
    ap.add_argument("--check-texts", action="store_true",
                    help="only check that every mutant applies and names a test that exists")
    ap.add_argument("--list", action="store_true", help="list the mutants")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=900, help="per test run, seconds")
    ap.add_argument("--table", help="also write the Markdown table here")
    a = ap.parse_args()
    if a.list:
        for m in MUTANTS:
            log(f"{m.name:36} {m.area:14} {m.test} {m.case or ''}")
        return 0
    if a.check_texts:
        problems = check_texts(os.path.abspath(a.build))
        for p in problems:
            log("ERROR " + p)
        log(f"mutation texts: {len(MUTANTS)} mutants, {len(problems)} problem(s)")
        return 2 if problems else 0
    selected = [m for m in MUTANTS if (not a.only or re.search(a.only, m.name))
                and (not a.sample or m.name in SAMPLE)]
    if not selected:
        raise SystemExit("no mutant selected")
    build_dir = os.path.abspath(a.build)
    fixtures = os.path.abspath(a.fixtures or os.path.join(build_dir, "fixtures"))
    tree = os.path.abspath(a.tree or build_dir.rstrip("/") + "-mutation/tree")
    bdir = os.path.join(tree, "build")
    os.makedirs(tree, exist_ok=True)
    t_all = time.monotonic()
    log(f"scratch tree {tree}: {sync_tree(tree)} file(s) copied")
    if not os.path.exists(os.path.join(bdir, "CMakeCache.txt")):
        status, out = sh(["cmake", "-S", tree, "-B", bdir, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                          "-DNNAPI_CONVERT_BUILD_TESTS=ON"])
        if status:
            raise SystemExit(out)
    link = os.path.join(bdir, "fixtures")
    if os.path.islink(link) and os.readlink(link) != fixtures:
        os.remove(link)
    if not os.path.islink(link):
        if os.path.exists(link):
            shutil.rmtree(link)
        os.symlink(fixtures, link)

    rows, errors = [], []
    for m in selected:
        t0 = time.monotonic()
        try:
            caught, why = check_mutant(tree, bdir, m, a.jobs, a.timeout)
            result = "caught" if caught else "NOT CAUGHT"
        except ToolError as e:
            caught, why, result = False, str(e), "ERROR"
            errors.append(m.name)
        secs = time.monotonic() - t0
        rows.append((m, result, why, secs))
        log(f"{m.name}: {result} ({why.splitlines()[0] if why else ''}; {secs:.0f} s)")
        if result == "ERROR":
            log(why)
    # Leave the scratch build unmutated.
    try:
        build(bdir, a.jobs, sorted({t for m in selected for t in targets_for(m.test)}))
    except ToolError as e:
        log(f"the restored scratch tree does not build: {e}")
        errors.append("(restore)")
    table = ["| mutant | area | file | declared catch | result | s |", "|---|---|---|---|---|---|"]
    for m, result, why, secs in rows:
        catch = m.test + (f" `{m.case}`" if m.case else "") + f" /{m.regex}/"
        shown = result if result != "caught" else f"caught: `{why}`"
        if result != "caught":
            shown += f" ({why.splitlines()[0][:120]})"
        table.append(f"| {m.name}: {m.what} | {', '.join(m.files)} | {catch.replace('|', '&#124;')} "
                     f"| {shown.replace('|', '&#124;')} | {secs:.0f} |")
    text = "\n".join(table)
    log(text)
    if a.table:
        with open(a.table, "w") as f:
            f.write(text + "\n")
    missed = [r[0].name for r in rows if r[1] == "NOT CAUGHT"]
    log(f"{sum(r[1] == 'caught' for r in rows)} of {len(rows)} mutants caught by their declared "
        f"test and message; {len(missed)} not caught; {len(errors)} error(s); "
        f"{time.monotonic() - t_all:.0f} s")
    return 2 if errors else 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
