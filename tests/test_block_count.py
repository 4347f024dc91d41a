"""`checker.judging.block_count`: how many blocks a model holds per layer asked for, read from real torch modules'
parameter names (`named_parameters`, as the worker sends them: name and shape).

Correct layouts students write (an nn.ModuleList or nn.Sequential of blocks, a final LayerNorm at the end of the
same Sequential, lucidrains' [attention, feed-forward] pairs, a flat [LN, attention, LN, MLP] * n list, heads in a
ModuleList inside each block, nn.TransformerEncoder, blocks as named attributes) give nothing; two blocks per
layer, one block too many or too few are named with the number of layers they were built for.
"""
import torch.nn as nn

from checker.judging.block_count import copies, describe, wrong_counts

D = 8


class Block(nn.Module):
    def __init__(self, heads=1):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.heads = nn.ModuleList(nn.Linear(D, 3 * D // heads) for _ in range(heads))
        self.proj = nn.Linear(D, D)
        self.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))


def _params(model):
    return [{"name": n, "shape": list(p.shape)} for n, p in model.named_parameters()]


def _model(blocks):
    m = nn.Module()
    m.embed, m.norm, m.head = nn.Embedding(11, D), nn.LayerNorm(D), nn.Linear(D, 11)
    m.blocks = blocks
    return m


def _judge(make, ns=(0, 1, 2, 3)):
    return wrong_counts({n: _params(make(n)) for n in ns}, large=D * D)


def test_correct_layouts_hold_n_blocks():
    layouts = {
        "module list": lambda n: _model(nn.ModuleList(Block() for _ in range(n))),
        "heads in each block": lambda n: _model(nn.ModuleList(Block(heads=2) for _ in range(n))),
        "sequential with a final norm": lambda n: _model(nn.Sequential(*[Block() for _ in range(n)], nn.LayerNorm(D))),
        "attention and feed-forward pairs": lambda n: _model(nn.ModuleList(
            nn.ModuleList([nn.Linear(D, 3 * D), nn.Sequential(nn.Linear(D, 2 * D), nn.Linear(2 * D, D))])
            for _ in range(n))),
        "flat norm, attention, norm, mlp": lambda n: _model(nn.ModuleList(
            m for _ in range(n) for m in (nn.LayerNorm(D), nn.Linear(D, 3 * D), nn.LayerNorm(D),
                                          nn.Linear(D, 4 * D)))),
        "torch's encoder": lambda n: _model(nn.TransformerEncoder(
            nn.TransformerEncoderLayer(D, 2, 16, batch_first=True, norm_first=True), max(n, 1),
            enable_nested_tensor=False)) if n else _model(nn.Identity()),
    }
    for name, make in layouts.items():
        assert _judge(make) == [], name


def test_blocks_as_named_attributes_or_shared_say_nothing():
    def named(n):
        m = _model(nn.Identity())
        for i in range(2 * n):  # two per layer, but under names of their own: the parameter counts judge them
            setattr(m, f"block_{chr(97 + i)}", Block())
        return m
    assert _judge(named) == []
    one = Block()
    assert _judge(lambda n: _model(nn.ModuleList([one] * n))) == []  # named once: test_*_own_weights judge it


def test_two_blocks_per_layer_one_too_many_and_one_too_few_are_named():
    doubled = _judge(lambda n: _model(nn.ModuleList(Block() for _ in range(2 * n))))
    assert doubled == [(1, 2, "blocks"), (2, 4, "blocks"), (3, 6, "blocks")]
    extra = _judge(lambda n: _model(nn.ModuleList(Block() for _ in range(n + 1))))
    assert extra[0] == (0, 1, "blocks") and len(extra) == 4
    fewer = _judge(lambda n: _model(nn.ModuleList(Block() for _ in range(max(n - 1, 0)))))
    assert fewer[0] == (1, 0, "blocks")


def test_a_model_refusing_zero_layers_is_judged_on_the_rest():
    def make(n):
        return _model(nn.ModuleList(Block() for _ in range(2 * n)))
    got = wrong_counts({0: None, **{n: _params(make(n)) for n in (1, 2, 3)}}, large=D * D)
    assert [n for n, _, _ in got] == [1, 2, 3]
    assert copies({0: None, 1: _params(make(1))}, large=D * D) == {}  # one model: nothing changes with n


def test_the_message_names_the_model_the_count_and_the_names():
    text = describe([(1, 2, "blocks"), (2, 4, "blocks")], lambda n: f"Model(num_layers={n})", "num_layers")
    assert text == ("Model(num_layers=1) holds 2 blocks of the same layers (blocks.0 to blocks.1 in its parameters' "
                    "names), not 1; with num_layers=2 it holds 4: num_layers is the number of blocks itself.")
    none = describe([(1, 0, "encoder")], lambda n: f"ViT({n})", "num_encoder_blocks")
    assert none.startswith("ViT(1) holds no block (no encoder.<i>")
