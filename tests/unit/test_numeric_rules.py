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
import os
import sys
import unittest

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
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


if __name__ == "__main__":
    unittest.main()
