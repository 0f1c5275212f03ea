"""Hypothesis strategies for generator arguments: valid values and edges, per argument.

A generator's test declares its documented argument space with these (`fuzz_arguments` of
a `tf_onthefly.testing.GeneratorTestCase`: argument -> Arg(valid, edges)); the contract's
fuzz check draws whole calls from it with `calls`: half of them entirely valid, the other
half with one argument taken from its edges, so both the documented output sets and every
argument's refusal are hit. Needs hypothesis (`pip install hypothesis`).
"""

import collections

from hypothesis import strategies as st

Arg = collections.namedtuple("Arg", "valid edges")

# Integers past int32 and int64 (in both directions) and floats where integers belong.
EDGE_INTS = st.sampled_from(
    [
        0,
        -1,
        -3,
        2**31 - 1,
        2**31,
        2**40,
        2**62,
        2**63 - 1,
        2**63,
        2**64 - 1,
        2**64 + 1,
        -(2**63),
        -(2**63) - 1,
        2.9,
        3.0,
    ]
)
# NaN, infinities, float32's edges, subnormals of both signs, a double float32 cannot hold.
EDGE_FLOATS = st.sampled_from(
    [
        float("nan"),
        float("inf"),
        -float("inf"),
        3e38,
        -3e38,
        3.4028235e38,
        1e39,
        1.4e-45,
        -1.4e-45,
        1.5e-38,
        -1.5e-38,
        1e-46,
        -0.0,
        0.0,
    ]
)


def sizes(low=1, high=40):
    return Arg(st.integers(low, high), EDGE_INTS)


def floats(low=-10.0, high=10.0):
    return Arg(st.floats(low, high, allow_nan=False), EDGE_FLOATS)


def unit():
    """A probability or fraction: [0, 1], else edges or a little outside."""
    return Arg(st.floats(0, 1), EDGE_FLOATS | st.floats(-2, 3))


def one_of(values, invalid=()):
    return Arg(st.sampled_from(values), st.sampled_from(list(invalid) or list(values)))


# Seeds and steps are 64-bit words, given as ints or pairs (a step vector, valid too, has a
# contract check of its own: test_contract_step_vector).
WORD = st.integers(-(2**63), 2**64 - 1)
COMMON = dict(
    seed=Arg(
        st.one_of(WORD, st.lists(WORD, min_size=2, max_size=2)),
        st.lists(st.integers(0, 9), min_size=0, max_size=3).filter(lambda l: len(l) != 2)
        | st.sampled_from([2**64, -(2**63) - 1, 1.5, [1.0, 2.0]]),
    ),
    step=Arg(
        WORD,
        st.lists(st.lists(st.integers(0, 5), min_size=1, max_size=2), min_size=1, max_size=2)
        | st.sampled_from([2**64, 2.0, [3, 2**64]]),
    ),
)


@st.composite
def calls(draw, arguments):
    """Keyword arguments of one call: the common ones and `arguments` (name -> Arg), all
    valid, or all but one valid. batch_size, num_samples and first_sample are drawn
    together (a valid shard lies inside the batch)."""
    args = dict(COMMON, **arguments)
    bad = draw(st.sampled_from([None] * (len(args) + 3) + sorted(args) + ["batch_size", "num_samples", "first_sample"]))
    kw = {name: draw(a.edges if name == bad else a.valid) for name, a in args.items()}
    kw["batch_size"] = batch = draw(EDGE_INTS if bad == "batch_size" else st.integers(1, 40))
    valid_batch = isinstance(batch, int) and 1 <= batch <= 40
    kw["num_samples"] = num = draw(
        st.one_of(st.none(), EDGE_INTS)
        if bad == "num_samples" or not valid_batch
        else st.one_of(st.none(), st.integers(0, batch))
    )
    rows = batch if num is None else num
    kw["first_sample"] = draw(
        EDGE_INTS
        if bad == "first_sample" or not valid_batch or not isinstance(rows, int) or not 0 <= rows <= batch
        else st.integers(0, batch - rows)
    )
    return kw
