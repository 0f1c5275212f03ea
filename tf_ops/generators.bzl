"""The generator registry: one line per generator.

A generator <name> is its op family tf_ops/<name>/, its Python wrapper
python/tf_onthefly/<name>.py (which registers it with example arguments) and its test
tests/<name>_test.py (contract tests, NumPy reference, argument space, output sets).
Everything that must know every generator reads this list or the Python registry built
from it: the op library, the Python package, the tests (contract, fuzz, conventions), the
wheel, the bench and rates tools and the op reference docs/ops.md.
"""

GENERATORS = [
    "drift_walk",
    "procedural_shapes",
    "random_batch",
    "random_walk",
    "tabular_mixture",
    "teacher_task",
]
