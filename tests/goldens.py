"""The golden batches: one set of calls, and the sha256 of each call's outputs, that every
front end must give bit for bit: TensorFlow (tests/wheel_smoke.py, tests/frameworks_test.py),
JAX and PyTorch (tests/frameworks_test.py, tests/framework_batches.py), on every device.

Framework-neutral on purpose (no TensorFlow import): arguments are plain Python, dtypes by
name. The digests were written from the CPU kernels, which the repository's tests check
against the NumPy reference (tests/reference.py); a deliberate change of outputs is a counter
contract change (docs/counter-contract.md) and comes with new digests. A new generator
needs a case here (tests/conventions_test.py fails without one); its digest line, and every
other case's, is printed by

    bazel run //tests:golden_digests
"""

import hashlib

# name -> (generator, keyword arguments without seed and step, seed, step). Every generator;
# every feature dtype of the generators that have one (float32, bfloat16, float16); shards
# (first_sample, num_samples); a tensor input; a launcher generator's scratch (drift_walk of
# three tiles). The first case of each generator is its canonical small call (the first of
# its examples in the TensorFlow registry) at seed 1, step 0.
CASES = {
    "drift_walk": ("drift_walk", dict(batch_size=8, length=10, up_probability=[0.3, 0.7]), 1, 0),
    "drift_walk/scratch": ("drift_walk", dict(batch_size=5, length=5000, up_probability=[0.45, 0.55]), [3, 4], 7),
    "drift_walk/shard": (
        "drift_walk",
        dict(batch_size=40, length=2049, up_probability=[0.5], first_sample=7, num_samples=20),
        2,
        5,
    ),
    "procedural_shapes": ("procedural_shapes", dict(batch_size=2, height=16, width=16), 1, 0),
    "procedural_shapes/float32": (
        "procedural_shapes",
        dict(batch_size=5, height=16, width=16, channels=1, dtype="float32", return_boxes=True),
        3,
        1,
    ),
    "procedural_shapes/bfloat16": (
        "procedural_shapes",
        dict(batch_size=3, height=12, width=20, dtype="bfloat16"),
        3,
        1,
    ),
    "procedural_shapes/float16": ("procedural_shapes", dict(batch_size=3, height=12, width=20, dtype="float16"), 3, 1),
    "random_batch": ("random_batch", dict(batch_size=8, feature_dim=4), 1, 0),
    "random_batch/normal": ("random_batch", dict(batch_size=256, feature_dim=64, distribution="normal"), [5, 6], 9),
    "random_batch/bfloat16": (
        "random_batch",
        dict(batch_size=33, feature_dim=12, dtype="bfloat16", low=-1.0, high=2.0),
        4,
        2,
    ),
    "random_batch/float16": (
        "random_batch",
        dict(batch_size=17, feature_dim=9, dtype="float16", distribution="normal"),
        4,
        2,
    ),
    "random_batch/shard": (
        "random_batch",
        dict(
            batch_size=100,
            feature_dim=7,
            first_sample=50,
            num_samples=33,
            label_mode="classes",
            num_classes=9,
            label_dtype="int32",
        ),
        8,
        2**40 + 3,
    ),
    "random_walk": ("random_walk", dict(batch_size=8, length=10), 1, 0),
    "random_walk/long": ("random_walk", dict(batch_size=33, length=300), [2**63 + 5, 7], 11),
    "tabular_mixture": ("tabular_mixture", dict(batch_size=8, feature_dim=4), 1, 0),
    "tabular_mixture/shard": (
        "tabular_mixture",
        dict(batch_size=12, feature_dim=3, first_sample=5, num_samples=6, task_seed=2**64 - 1),
        6,
        3,
    ),
    "teacher_task": ("teacher_task", dict(batch_size=8, feature_dim=4), 1, 0),
    "teacher_task/regression": (
        "teacher_task",
        dict(batch_size=64, feature_dim=8, task="regression", noise=0.3, distribution="uniform"),
        9,
        4,
    ),
}

# Calls of a vector of steps, which each front end's tests check against its calls of one
# step each: a 16-bit dtype, a shard, and a generator with a tensor input and (on a GPU)
# scratch memory. The steps as words: 2^64 - 1 is -1 as an int32 tensor.
STEP_VECTOR = [11, 2**64 - 1, 0, 11]
STEP_VECTOR_INT32 = [11, -1, 0, 11]
STEP_VECTOR_CASES = [
    ("random_batch", dict(batch_size=9, feature_dim=5, dtype="bfloat16")),
    ("random_batch", dict(batch_size=9, feature_dim=5, first_sample=3, num_samples=4)),
    ("drift_walk", dict(batch_size=3, length=5000, up_probability=[0.2, 0.5, 0.9])),
]

# sha256 of every output (dtype name, shape, bytes) of each case (digest below).
DIGESTS = {
    "drift_walk": "67ca5b8cafdc626d72a95d5c721764995e2d187de2c7fe25256a63bcd87852d7",
    "drift_walk/scratch": "8ab1d319161dda68c309d422f7c84be39119710fbc676299213945120bba49a1",
    "drift_walk/shard": "aca1327c840f4ec06947456179e1432fb9048ba2d62fa01d300b25640eb94bf8",
    "procedural_shapes": "ffdc7ac7896d86e0260966a3df9b6262677d60b73ee79490e92babbb9a162e60",
    "procedural_shapes/float32": "0d9e689fe5642a22b1ec77ee1613164937a7a95a8d6c544099f00e6d1c4f076e",
    "procedural_shapes/bfloat16": "bd6a3c1ab9d2214204b5652c5a829f57a34877f2e7a0cd20a46cb9dd0c9e525c",
    "procedural_shapes/float16": "8ccd6b117c48ff6a26d65e5f31fbda507bef7f92d9571386770614d04a555dc2",
    "random_batch": "193e10b95031ad807d7e1cac12e33a131514621f6ce4d6e9fc3cc53ab8ffe26f",
    "random_batch/normal": "9393775c609c36b1b8eb7128083f5b161c6618472c409b0f6624d2461620ad07",
    "random_batch/bfloat16": "80520452de696bb8ee7fdbc311a9bac8c12978c3285632b934fd531047c1d630",
    "random_batch/float16": "707c34b6e1bea03cefc013ca27b411334f4379a7dd15b02f5d64972ca614ac39",
    "random_batch/shard": "6b0e499316e705d19ba45d8d87fa4973d9920a7708771d62dcd17706ab3ca564",
    "random_walk": "aee56c4f5ca66cae97821a32f4a0d3264d9846cb2afa5aecd6ad63260a8e3d08",
    "random_walk/long": "c5ba8a849c769e14ceef743dcfefb3eb093b6bdec888b10626e3672dcd4724fd",
    "tabular_mixture": "7da473a1f64bb908bc33657dab9ffe6d2f214ef68fad04804861e0d6a1a3b18e",
    "tabular_mixture/shard": "1da132c70e22c767008b80745fbe5f4c1008847bae84f3955858691b053d1b12",
    "teacher_task": "b2de1b1ea26f4091c6d16ba95ca9611d970e78333e77d9bc1e959830c76a79d7",
    "teacher_task/regression": "1d1b6feca42b8c170db1e2bee497dc894c738b965be130731aa851ecffb140ca",
}


def digest(outputs) -> str:
    """sha256 of outputs given as (dtype name, shape tuple, bytes) each."""
    h = hashlib.sha256()
    for dtype, shape, data in outputs:
        h.update(f"{dtype}{tuple(shape)}".encode())
        h.update(data)
    return h.hexdigest()
