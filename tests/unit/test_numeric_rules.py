#!/usr/bin/env python3
"""tools/numeric_rules.py, the quantized rule of the Python checkers (the zoo,
test_reference_models.py, fallback_test.py), against what the project states
for every numeric check (README's test section, `nnapi-convert --help` on
--verify): quantized outputs need the model's scale and zero point, no element
off by more than one quantum, and at most 3% of the elements off by one (the
share PyTorch's test/test_nnapi.py allows for quantized convolutions); a float
output computed with DEQUANTIZE is measured in quanta of that operand; a check
that a constant output would pass proves nothing. Each clause has a case that
must fail, so a rule that forgot it (tools/mutation_check.py plants that) is
seen. Run with /usr/bin/python3 (imports torch).
"""
import math
import os
import sys
import unittest

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import model_zoo  # noqa: E402
import numeric_rules  # noqa: E402

SCALE, ZERO_POINT = 0.05, 10


def quantized(ints, scale=SCALE, zero_point=ZERO_POINT):
    return torch._make_per_tensor_quantized_tensor(
        torch.tensor(ints, dtype=torch.uint8), scale, zero_point)


EAGER_INTS = [(7 * k) % 200 + 20 for k in range(100)]  # 100 elements spanning 20..219


def shifted(n, by, **qparams):
    """The eager output with its first n integers moved up by `by`."""
    return quantized([v + by if k < n else v for k, v in enumerate(EAGER_INTS)], **qparams)


class QuantizedRule(unittest.TestCase):
    def setUp(self):
        self.eager = quantized(EAGER_INTS)

    def verdict(self, nnapi):
        problem, _, _ = numeric_rules.compare_quantized(self.eager, nnapi)
        return problem

    def test_identical_passes(self):
        self.assertIsNone(self.verdict(shifted(0, 0)))

    def test_three_percent_off_by_one_passes(self):
        self.assertIsNone(self.verdict(shifted(3, 1)))

    def test_four_percent_off_by_one_fails(self):
        problem = self.verdict(shifted(4, 1))
        self.assertIsNotNone(problem, "4 of 100 elements off by one: more than 3%")
        self.assertIn("4 of 100 elements off by one quantum", problem)

    def test_one_element_two_quanta_off_fails(self):
        problem = self.verdict(shifted(1, 2))
        self.assertIsNotNone(problem, "one element two quanta off: none may be off by more than one")
        self.assertIn("off by 2 quanta", problem)

    def test_other_scale_fails(self):
        problem = self.verdict(shifted(0, 0, scale=SCALE * 2))
        self.assertIsNotNone(problem, "the integers match but the scale is twice the model's")
        self.assertIn("but the model's output has", problem)

    def test_other_zero_point_fails(self):
        problem = self.verdict(shifted(0, 0, zero_point=ZERO_POINT + 1))
        self.assertIsNotNone(problem, "the integers match but the zero point is the model's + 1")
        self.assertIn("but the model's output has", problem)


class DequantizedQuanta(unittest.TestCase):
    def test_differences_in_quanta(self):
        eager = torch.tensor([0.0, 1.0, 2.0, 3.0], dtype=torch.float64)
        nnapi = eager + torch.tensor([0.0, 0.1, -0.2, 0.6], dtype=torch.float64)
        # |difference| / 0.25, rounded to the nearest: 0, 0.4 -> 0, 0.8 -> 1, 2.4 -> 2.
        got = numeric_rules.dequantized_quanta(eager, nnapi, 0.25).tolist()
        self.assertEqual(got, [0, 0, 1, 2])
        problem, _, _ = numeric_rules.quanta_verdict(torch.tensor(got))
        self.assertIsNotNone(problem, "an element two quanta off")


class ConstantWouldPass(unittest.TestCase):
    def test_faded_output(self):
        # mobilenet_v2's output with torchvision's initialisation: about 3e-9.
        faded = torch.full((10,), 3e-9) * torch.arange(1, 11)
        self.assertIsNotNone(numeric_rules.constant_would_pass(faded, atol=1e-4, rtol=1e-4))

    def test_narrow_output(self):
        narrow = 5.0 + torch.arange(10) * 1e-6
        self.assertIsNotNone(numeric_rules.constant_would_pass(narrow, atol=1e-4, rtol=1e-4))

    def test_quantized_within_two_integers(self):
        self.assertIsNotNone(numeric_rules.constant_would_pass(quantized([50, 51, 52, 51])))

    def test_meaningful_outputs(self):
        self.assertIsNone(numeric_rules.constant_would_pass(torch.linspace(-3, 3, 10),
                                                            atol=1e-4, rtol=1e-4))
        self.assertIsNone(numeric_rules.constant_would_pass(quantized(EAGER_INTS)))


class Float16Rule(unittest.TestCase):
    """docs/verify.md: an output of float16 computation passes within atol and
    rtol of at least 5/1024 element by element, or else when rms(nnapi -
    model) <= L * 2^-11 * rms(model), L the NNAPI model's operation count."""

    def setUp(self):
        self.eager = torch.linspace(-2.0, 2.0, 100)
        # one element (eager 1.0...) 0.1 off: outside 5/1024 + 5/1024 * |eager|
        self.one_off = self.eager.clone()
        self.k = int((self.eager - 1.0).abs().argmin())
        self.one_off[self.k] += 0.1
        diff = self.one_off.double() - self.eager.double()
        self.rel = float(diff.pow(2).mean().sqrt() / self.eager.double().pow(2).mean().sqrt())

    def test_float16_tolerances_not_float32_ones(self):
        # 0.004 is 40 times float32's atol 1e-4, within float16's 5/1024
        self.assertIsNone(numeric_rules.float16_verdict(self.eager, self.eager + 0.004, 0))
        problem = numeric_rules.float16_verdict(self.eager, self.eager + 0.006, 0)
        self.assertIsNotNone(problem, "0.006 off near 0: outside atol 5/1024")

    def test_relative_tolerance(self):
        # 0.01 off at |eager| 2 is within 5/1024 + 5/1024 * 2 = 0.0146
        self.assertIsNone(numeric_rules.float16_verdict(self.eager, self.eager * 1.005, 0))

    def test_rms_rule_passes_at_enough_operations(self):
        ops = math.ceil(self.rel / 2 ** -11)
        self.assertIsNone(numeric_rules.float16_verdict(self.eager, self.one_off, ops))

    def test_rms_rule_fails_at_too_few_operations(self):
        ops = math.floor(self.rel / 2 ** -11)
        problem = numeric_rules.float16_verdict(self.eager, self.one_off, ops)
        self.assertIsNotNone(problem, f"RMS error {self.rel} over {ops} x 2^-11")
        self.assertIn("1 of 100 elements differ", problem)

    def test_no_operations_element_by_element_only(self):
        self.assertIsNotNone(numeric_rules.float16_verdict(self.eager, self.one_off, 0))

    def test_non_finite_fails(self):
        bad = self.eager.clone()
        bad[3] = float("nan")
        self.assertIsNotNone(numeric_rules.float16_verdict(self.eager, bad, 1000))

    def test_larger_tolerance_kept(self):
        self.assertIsNone(numeric_rules.float16_verdict(self.eager, self.eager + 0.05, 0, atol=0.1))


class ZooUsesTheRule(unittest.TestCase):
    """tools/model_zoo.py's verdicts (compare_float, verdict) against what
    --verify states: float outputs within 1e-4 + 1e-4 * |model| (the absolute
    part in units of max(1, RMS) in the zoo), a check a constant would pass
    fails, and the float64 comparison only for the models FLOAT64_ALLOWED
    lists."""

    FLOAT = {"kind": "float"}
    EAGER = torch.linspace(-3, 3, 101)  # RMS 1.75: the absolute part is 1.75e-4

    def float_verdict(self, out, info=None, name="resnet18", extra=None):
        res = model_zoo.compare_float(out, self.EAGER, info or self.FLOAT)
        res.update(extra or {})
        return model_zoo.verdict(res, info or self.FLOAT, name)

    def test_zoo_float_within_rule_passes(self):
        # 1.5e-4 everywhere: within 1.75e-4 (plus 1e-4 |x|).
        ok, text = self.float_verdict(self.EAGER + 1.5e-4)
        self.assertTrue(ok, text)

    def test_zoo_float_past_rule_fails(self):
        # One element (at x = 0) off by 2e-4: past 1.75e-4 + 1e-4 * 0, though
        # within the old 1e-3 rule.
        out = self.EAGER.clone()
        out[50] += 2e-4
        ok, text = self.float_verdict(out)
        self.assertFalse(ok, text)

    def test_zoo_family_tolerance_is_kept(self):
        info = {"kind": "family", "tolerance": [0.05, 0.05]}
        ok, text = self.float_verdict(self.EAGER + 0.01, info=info)
        self.assertTrue(ok, text)

    def test_zoo_constant_output_fails(self):
        eager = torch.full((10,), 2.0)
        res = model_zoo.compare_float(eager.clone(), eager, self.FLOAT)
        ok, text = model_zoo.verdict(res, self.FLOAT, "resnet18")
        self.assertFalse(ok, text)
        self.assertIn("constant", text)

    def test_zoo_float64_pass_only_for_listed_models(self):
        out = self.EAGER + 1e-3  # past the rule
        near64 = {"vs64": 1e-3, "eager_vs64": 1e-3}  # as far from float64 as eager is
        self.assertFalse(self.float_verdict(out, name="resnet18", extra=near64)[0])
        self.assertTrue(self.float_verdict(out, name="mobilenet_v3_large", extra=near64)[0])
        far64 = {"vs64": 3e-3, "eager_vs64": 1e-3}
        self.assertFalse(self.float_verdict(out, name="mobilenet_v3_large", extra=far64)[0])

    def test_zoo_float64_bound_is_the_models_own(self):
        # deeplabv3_mobilenet_v3_large's bound is 4 (measured 3.53), the others' 2.
        out = self.EAGER + 1e-3
        at35 = {"vs64": 3.5e-3, "eager_vs64": 1e-3}
        self.assertTrue(self.float_verdict(
            out, name="deeplabv3_mobilenet_v3_large", extra=at35)[0])
        self.assertFalse(self.float_verdict(out, name="mobilenet_v3_large", extra=at35)[0])
        at45 = {"vs64": 4.5e-3, "eager_vs64": 1e-3}
        self.assertFalse(self.float_verdict(
            out, name="deeplabv3_mobilenet_v3_large", extra=at45)[0])

    def test_zoo_quantized_uses_quanta_rule(self):
        info = {"kind": "fxquant", "quantum": 0.1}
        res = {"weak": None, "allclose": False, "quanta_problem": "2 quanta", "quanta_summary": ""}
        self.assertFalse(model_zoo.verdict(res, info, "resnet18")[0])
        res["quanta_problem"] = None
        self.assertTrue(model_zoo.verdict(res, info, "resnet18")[0])


if __name__ == "__main__":
    unittest.main()
