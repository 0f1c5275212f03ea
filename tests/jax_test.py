"""tf_onthefly.jax: the generators through jax.ffi, in a process that never imports TensorFlow.

Every golden case (tests/goldens.py) gives its golden digest, eagerly and under jit with the
step traced; a new step or seed never retraces; vmap (sequential) equals the calls one by
one; shard_map over two devices, each shard's first sample from the axis index, equals the
unsharded batch; 64-bit seeds and steps with and without jax_enable_x64; errors name the op
and the argument. --test_device=gpu: the same on the first CUDA device (two CPU devices
stand in for the shards).

    python tests/jax_test.py [--test_device=cpu|gpu]
"""

import os
import sys
import unittest

# Two CPU devices for shard_map; set before JAX starts.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=2")
DEVICE = "gpu" if "--test_device=gpu" in sys.argv else "cpu"
sys.argv = [a for a in sys.argv if not a.startswith("--test_device")]

import goldens  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import tf_onthefly.jax as otf  # noqa: E402

SDK_OPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sdk_ops", "_sdk_test_ops.so")
TARGET = jax.devices("cuda" if DEVICE == "gpu" else "cpu")[0]
try:
    from jax import shard_map as _shard_map  # JAX >= 0.8

    def shard_map(f, mesh, in_specs, out_specs):
        return _shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs)
except ImportError:
    from jax.experimental.shard_map import shard_map as _shard_map

    def shard_map(f, mesh, in_specs, out_specs):
        return _shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_rep=False)


def digest(outs):
    return goldens.digest([(str(np.asarray(o).dtype), tuple(o.shape), np.asarray(o).tobytes()) for o in outs])


def same(a, b):
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(np.asarray(x).view(np.uint8), np.asarray(y).view(np.uint8))


class JaxTest(unittest.TestCase):
    def setUp(self):
        self.enterContext(jax.default_device(TARGET))

    def tearDown(self):
        self.assertNotIn("tensorflow", sys.modules)

    def test_generators_and_signatures(self):
        self.assertLessEqual(
            {"drift_walk", "procedural_shapes", "random_batch", "random_walk", "tabular_mixture", "teacher_task"},
            set(otf.GENERATORS),
        )
        sig = str(otf.random_batch.__signature__)
        self.assertTrue(sig.startswith("(batch_size, feature_dim, seed, step, *, distribution='uniform'"), sig)
        self.assertIn("OnTheFly>RandomBatch", otf.random_batch.__doc__)

    def test_goldens_eager_and_jit(self):
        for name, (generator, args, seed, step) in goldens.CASES.items():
            with self.subTest(case=name):
                fn = otf.GENERATORS[generator]
                self.assertEqual(digest(fn(**args, seed=seed, step=step)), goldens.DIGESTS[name])
                if step < 2**31:  # a traced int32 step (no jax_enable_x64)
                    jitted = jax.jit(lambda s, fn=fn, args=args, seed=seed: fn(**args, seed=seed, step=s))
                    outs = jitted(jnp.int32(step))
                    self.assertTrue(all(TARGET in o.devices() for o in outs))
                    self.assertEqual(digest(outs), goldens.DIGESTS[name])

    def test_a_new_step_or_seed_never_retraces(self):
        traces = []

        @jax.jit
        def batch(seed, step):
            traces.append(1)
            return otf.random_batch(16, 8, seed=seed, step=step)

        for step in range(4):
            for seed in (jnp.int32(1), jnp.int32(2)):
                got = batch(seed, jnp.int32(step))
                same(got, otf.random_batch(16, 8, seed=int(seed), step=step))
        self.assertEqual(len(traces), 1)

    def test_negative_and_unsigned_32_bit_steps_widen_as_tensorflow_casts(self):
        same(otf.random_walk(4, 5, seed=1, step=jnp.int32(-3)), otf.random_walk(4, 5, seed=1, step=-3))
        same(otf.random_walk(4, 5, seed=1, step=jnp.uint32(2**32 - 1)), otf.random_walk(4, 5, seed=1, step=2**32 - 1))
        seed = jnp.asarray([-1, 7], jnp.int32)
        same(otf.random_walk(4, 5, seed=seed, step=0), otf.random_walk(4, 5, seed=[-1, 7], step=0))

    def test_vmap_is_the_calls_one_by_one(self):
        steps = jnp.arange(5, dtype=jnp.int32)
        features, labels = jax.vmap(lambda s: otf.random_batch(6, 3, seed=[1, 2], step=s))(steps)
        self.assertEqual(features.shape, (5, 6, 3))
        for i in range(5):
            same((features[i], labels[i]), otf.random_batch(6, 3, seed=[1, 2], step=i))
        seeds = jnp.asarray([[1, 2], [3, 4]], jnp.int32)
        walks, _ = jax.jit(jax.vmap(lambda s: otf.drift_walk(4, 3000, [0.2, 0.8], seed=s, step=1)))(seeds)
        same((walks[1],), otf.drift_walk(4, 3000, [0.2, 0.8], seed=[3, 4], step=1)[:1])

    def test_a_step_vector_is_its_steps_batches_stacked(self):
        """step of shape [n] (a list, NumPy, or a JAX array, traced or not, 32- or 64-bit)
        gives the n steps' batches stacked, each bit for bit its step's alone: for a shard,
        with tensor inputs, with scratch (drift_walk's long walks on a GPU), and with no step."""
        steps = goldens.STEP_VECTOR
        for name, kw in goldens.STEP_VECTOR_CASES:
            fn = otf.GENERATORS[name]
            with self.subTest(generator=name, **{k: str(v) for k, v in kw.items()}):
                alone = [fn(**kw, seed=[5, 6], step=s) for s in steps]
                want = [np.stack([np.asarray(a[i]) for a in alone]) for i in range(len(alone[0]))]
                for given in (steps, np.asarray(steps, np.uint64)):
                    same(fn(**kw, seed=[5, 6], step=given), want)
                traced = jax.jit(lambda s, fn=fn, kw=kw: fn(**kw, seed=[5, 6], step=s))
                same(traced(jnp.asarray(goldens.STEP_VECTOR_INT32, jnp.int32)), want)
                none = fn(**kw, seed=[5, 6], step=[])
                self.assertEqual([o.shape for o in none], [(0, *np.shape(o)) for o in alone[0]])
        jax.config.update("jax_enable_x64", True)
        try:
            got = jax.jit(lambda s: otf.random_walk(4, 5, seed=1, step=s))(jnp.asarray([2**40, 3], jnp.int64))
            same(
                got,
                [
                    np.stack(x)
                    for x in zip(otf.random_walk(4, 5, seed=1, step=2**40), otf.random_walk(4, 5, seed=1, step=3))
                ],
            )
        finally:
            jax.config.update("jax_enable_x64", False)

    def test_shard_map_each_shard_its_rows_of_the_global_batch(self):
        devices = jax.devices("cpu")[:2]
        self.assertEqual(len(devices), 2, "XLA_FLAGS must give two CPU devices")
        mesh = jax.sharding.Mesh(np.array(devices), ("data",))
        P = jax.sharding.PartitionSpec
        batch, rows = 12, 6

        for fn, extra in [
            (otf.random_batch, dict(feature_dim=5, dtype=jnp.bfloat16)),
            (otf.drift_walk, dict(length=5000, up_probability=[0.3, 0.6])),
            (otf.procedural_shapes, dict(height=8, width=8, return_boxes=True)),
        ]:
            with self.subTest(generator=fn.__name__):

                def shard(step, fn=fn, extra=extra):
                    first = jax.lax.axis_index("data") * rows
                    return fn(batch, **extra, seed=[5, 6], step=step[0], first_sample=first, num_samples=rows)

                sharded = jax.jit(shard_map(shard, mesh, in_specs=P(), out_specs=P("data")))(jnp.zeros(1, jnp.int32))
                whole = fn(batch, **extra, seed=[5, 6], step=0)
                same(sharded, whole)

    def test_traced_first_sample_on_one_device(self):
        whole = otf.tabular_mixture(10, 3, seed=4, step=2)
        part = jax.jit(lambda f: otf.tabular_mixture(10, 3, seed=4, step=2, first_sample=f, num_samples=4))(3)
        same(part, [w[3:7] for w in whole])

    def test_x64(self):
        jax.config.update("jax_enable_x64", True)
        try:
            labels = otf.random_batch(8, 2, seed=1, step=2**40, label_mode="classes", label_dtype=jnp.int64)[1]
            self.assertEqual(labels.dtype, jnp.int64)
            got = jax.jit(lambda s: otf.random_walk(33, 300, seed=[2**63 + 5, 7], step=s))(jnp.asarray(11, jnp.int64))
            self.assertEqual(digest(got), goldens.DIGESTS["random_walk/long"])
            step = jnp.asarray(2**40 + 3, jnp.int64)
            seed = jnp.asarray([2**62, -5], jnp.int64)
            same(otf.random_walk(4, 5, seed=seed, step=step), otf.random_walk(4, 5, seed=[2**62, -5], step=2**40 + 3))
        finally:
            jax.config.update("jax_enable_x64", False)
        with self.assertRaisesRegex(ValueError, r"OnTheFly>RandomBatch: output labels \(int64\) needs 64-bit types"):
            otf.random_batch(8, 2, seed=1, step=0, label_dtype=jnp.int64)

    @unittest.skipUnless(os.path.exists(SDK_OPS), "the SDK's test library is built by Bazel")
    def test_generators_of_ones_own(self):
        added = otf.load_generators(SDK_OPS)
        self.assertIn("sdk_test_add_rows", added)
        self.assertIs(otf.sdk_test_add_rows, added["sdk_test_add_rows"])
        rows = np.arange(12, dtype=np.float32).reshape(4, 3)
        (out,) = jax.jit(lambda r, s: otf.sdk_test_add_rows(4, 3, r, seed=5, step=s))(rows, jnp.int32(2))
        (stacked,) = otf.sdk_test_add_rows(4, 3, rows, seed=5, step=[2, 7])
        same((stacked[0],), (out,))
        with self.assertRaisesRegex(otf._core.CoreError, "OnTheFly>SdkTestEarlierRecord: a vector of steps under XLA"):
            otf.sdk_test_earlier_record(4, 3, rows, seed=5, step=[2, 7])
        (want,) = otf.CORE.configure("OnTheFly>SdkTestAddRows", batch_size=4, width=3).run_cpu(5, 2, inputs=[rows])
        same((out,), (want,))
        self.assertEqual(otf.load_generators(SDK_OPS), {})  # loaded once

    def test_errors_name_the_op_and_the_argument(self):
        core_error = otf._core.CoreError
        for call, error, message in [
            (lambda: otf.random_walk(4, 0, seed=1, step=0), core_error, "OnTheFly>RandomWalk: length must be in"),
            (
                lambda: otf.random_walk(4, 3, seed=1, step=0, lenght=2),
                TypeError,
                "unexpected keyword argument 'lenght'",
            ),
            (lambda: otf.random_walk(4, seed=1, step=0), TypeError, "missing required arguments: 'length'"),
            (lambda: otf.random_walk(4, 3, seed=[1, 2, 3], step=0), ValueError, "seed must be an integer or a pair"),
            (
                lambda: otf.random_walk(4, 3, seed=1.5, step=0),
                ValueError,
                "seed must be an integer array, got dtype float",
            ),
            (
                lambda: otf.random_walk(4, 3, seed=1, step=jnp.zeros((1, 2), jnp.int32)),
                ValueError,
                r"OnTheFly>RandomWalk: step must be an integer scalar, or a vector of steps of shape \[n\], got shape \[1, 2\]",
            ),
            (
                lambda: otf.random_walk(4, 3, seed=1, step=[[1, 2]]),
                ValueError,
                r"OnTheFly>RandomWalk: step must be an integer scalar, or a vector of steps of shape \[n\], got shape \[1, 2\]",
            ),
            (
                lambda: otf.random_walk(4, 3, seed=1, step=[1, 2.5]),
                ValueError,
                "step must be an integer array, got dtype float",
            ),
            (
                lambda: otf.random_batch(1 << 20, 1024, seed=1, step=np.zeros(20, np.int64)),
                core_error,
                "OnTheFly>RandomBatch: output features of 20 steps of",
            ),
            (lambda: otf.random_batch(4, 3, seed=1, step=0, dtype=jnp.int32), core_error, "attr 'dtype' of int32"),
            (lambda: otf.random_batch(4, 3, seed=1, step=0, high=1e39), ValueError, "high must fit in float32"),
            (
                lambda: otf.random_batch(4, 3, seed=1, step=0, first_sample=2, num_samples=3),
                ValueError,
                "first_sample must be in",
            ),
            (
                lambda: otf.drift_walk(4, 3, [[0.5]], seed=1, step=0),
                ValueError,
                r"OnTheFly>DriftWalk: up_probability must have shape \[n\], got \[1, 1\]",
            ),
            (
                lambda: otf.drift_walk(4, 3, jnp.asarray([1], jnp.int32), seed=1, step=0),
                ValueError,
                "up_probability must be a float32 array",
            ),
        ]:
            with self.subTest(message=message):
                with self.assertRaisesRegex(error, message):
                    jax.block_until_ready(call())
        if DEVICE == "cpu":  # values are checked where they are in host memory (the Host handler)
            with self.assertRaisesRegex(Exception, r"OnTheFly>DriftWalk: up_probability must be in \[0, 1\]"):
                jax.block_until_ready(otf.drift_walk(4, 3, [1.5], seed=1, step=0))


if __name__ == "__main__":
    unittest.main()
