"""Spare parameters that the new temperature fits and block tests read, made to break them (an attacker's probe).

A parameter named with a 5,000-digit number made the vit and charlm temperature tests' head-index parse raise
ValueError (Python's limit on int() of a long digit string), and a NaN-filled spare vector of the MLP's width
made the MLP test's SVD fail to converge: each became "the grader could not check this result" (outcome error)
instead of a verdict. Each trick is added to the example's correct file; the tests in question must end in a
verdict (passed, failed or skipped with a reason), never an error.
"""
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TRICKS = {
    # (assignment, the line after which the trick goes, the trick, the tests that broke)
    "charlm-digits": ("charlm", "        self.block_size = block_size\n",
                      '        self.register_parameter("head" + "1" * 5000, nn.Parameter(torch.zeros(d_model // num_heads, '
                      'd_model)))\n', "test_model_attention_scaled_by_the_head_width"),
    "vit-digits": ("vit", "        self.d_k = hidden_dim // num_heads\n",
                   '        self.register_parameter("w" + "7" * 5000, nn.Parameter(torch.zeros(self.d_k, hidden_dim)))\n',
                   "test_mhsa_scales_the_scores_by_the_head_width"),
    "vit-nan-vector": ("vit", "            nn.Linear(mlp_ratio * hidden_dim, hidden_dim),\n        )\n",
                       '        self.gate = nn.Parameter(torch.full((mlp_ratio * hidden_dim,), float("nan")))\n',
                       "test_vit_mlp_is_not_linear"),
}


@pytest.mark.parametrize("trick", sorted(TRICKS))
def test_a_spare_parameter_makes_no_grader_error(trick, hidden_grader, tmp_path):
    aid, anchor, extra, broke = TRICKS[trick]
    source = open(os.path.join(ROOT, "submissions", aid, "correct.py"), encoding="utf-8").read()
    assert source.count(anchor) == 1, (trick, anchor)
    path = tmp_path / f"{trick}.py"
    path.write_text(source.replace(anchor, anchor + extra), encoding="utf-8")
    card = hidden_grader.grade(str(path), aid)
    tests = [t for q in card["questions"] for t in q["tests"]]
    assert any(t["name"].startswith(broke) for t in tests), broke
    errors = [f"{t['name']}: {t['message'][:300]}" for t in tests if t["outcome"] == "error"]
    assert not errors, errors
