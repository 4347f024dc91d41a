"""test_vit_block_attention_is_the_handouts's diagnosis names a cause only where the evidence points there:

  * a patch embedding with a LayerNorm over each patch's pixels before the projection (vit-pytorch's
    `nn.LayerNorm(patch_dim)`): on the test's all-zero image its tokens are not the projection's bias, so the block
    reads other tokens than the grader set, and the attention, right, is not to blame ("no softmax" was said); the
    message names the patch embedding (examples/patch_layernorm_before_projection);
  * a softmax over the queries at a seed where the attention moves the logits little (15847156, 2): the closest of the
    ways of reading the projections was a wrong one by chance, under which every candidate missed and "no softmax"
    was said; every way is tried now, and the query axis is named (examples/block_attention_softmax_over_queries).
"""
import os

import pytest

from checker.running.runner import Grader

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "assignments", "vit", "examples")
NO_SOFTMAX = "no softmax"


def _messages(card, test):
    return [t["message"] for q in card["questions"] for t in q["tests"] if t["name"] == test]


@pytest.mark.slow
def test_a_layernorm_before_the_patch_projection_is_named_not_the_attention(hidden_grader):
    card = hidden_grader.grade(os.path.join(EXAMPLES, "patch_layernorm_before_projection.py"), "vit")
    [msg] = _messages(card, "test_vit_block_attention_is_the_handouts")
    assert NO_SOFTMAX not in msg and "computes another function" not in msg
    assert "but not because of the block's attention: with patch_norm.bias, patch_norm.weight zeroed" in msg
    assert "a LayerNorm over each patch's pixels before the projection" in msg


@pytest.mark.slow
@pytest.mark.parametrize("seed", [15847156, 2])
def test_a_softmax_over_the_queries_is_named_where_a_wrong_way_came_closest(seed):
    with Grader(mode="hidden", seed=seed) as g:
        card = g.grade(os.path.join(EXAMPLES, "block_attention_softmax_over_queries.py"), "vit")
    [msg] = _messages(card, "test_vit_block_attention_is_the_handouts")
    assert NO_SOFTMAX not in msg
    assert "the softmax inside the encoder blocks' attention runs over the queries (dim=-2)" in msg
