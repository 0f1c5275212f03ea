"""GPU memory pressure: a call whose outputs are within the per-output cap (64 GiB) but do
not fit the GPU memory free now gets a ResourceExhaustedError naming the op and the bytes
asked; the process stays usable and the next, smaller call succeeds, eagerly and under XLA.

The GPU variant limits TensorFlow to MEMORY_LIMIT_GIB of the GPU (a logical device, set
before the GPU is initialised), so the sizes are the same on any GPU that has that much:
a 48 GiB output is within the cap and beyond the memory, and with a 30 GiB tensor held, a
16 GiB output is beyond what is free. Run by hand with
`python3 tests/memory_pressure_test.py --test_device=gpu`. The CPU variant checks the
boundary on the other side: a call over the cap is refused before anything is allocated.
"""

import re

import numpy as np
import tensorflow as tf

import tf_onthefly
from tf_onthefly import _load

import device_util

GIB = 1 << 30
MEMORY_LIMIT_GIB = 40
DIM = 1024  # float32 features: 4 KiB a row


def rows(gib):
    return gib * GIB // (4 * DIM)


def features_bytes(gib):
    return rows(gib) * DIM * 4


def call(gib):
    return tf_onthefly.random_batch(rows(gib), DIM, seed=1, step=2)


def sizes_named(message):
    """The sizes a message names, in bytes: plain byte counts and figures like 48.00GiB."""
    sizes = [int(n) for n in re.findall(r"\b\d{9,}\b", message)]
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    for value, unit in re.findall(r"(\d+(?:\.\d+)?)\s*([KMGT])i?B", message):
        sizes.append(int(float(value) * units[unit]) + (1 << 20))  # rounding in the message
    return sizes


def small_call_is_right(test):
    """A small call after a refusal gives the contract's values (the CPU's, bit for bit)."""
    x, y = tf_onthefly.random_batch(64, DIM, seed=1, step=2)
    with tf.device("/CPU:0"):
        cx, cy = tf_onthefly.random_batch(64, DIM, seed=1, step=2)
    test.assertAllEqual(x, cx)
    test.assertAllEqual(y, cy)


class MemoryPressureTest(device_util.DeviceTestCase):
    def assertRefused(self, run, gib, xla=False):
        """run() raises ResourceExhaustedError naming the op (eager) and the bytes asked."""
        with self.assertRaises(tf.errors.ResourceExhaustedError) as caught:
            out = run()
            np.asarray(out[1])  # wait for it: an error may come when the result is read
        message = str(caught.exception)
        print(f"refused ({gib} GiB asked{', XLA' if xla else ''}): {message[:600]}")
        asked = features_bytes(gib)
        if xla:
            # XLA allocates a compiled function's outputs itself, before the op's code runs:
            # the error is XLA's and names the bytes of the allocation it could not make.
            self.assertTrue(
                any(n >= asked for n in sizes_named(message)),
                f"no allocation of at least {asked} bytes named in: {message[:2000]}",
            )
        else:
            self.assertIn("OnTheFly>RandomBatch", message)
            self.assertIn(f"output features needs {asked} bytes", message)
        return message

    @device_util.DeviceTestCase.require_gpu
    def test_output_beyond_memory_within_cap(self):
        self.assertLess(features_bytes(48), 64 * GIB)  # within the documented cap
        self.assertRefused(lambda: call(48), 48)
        small_call_is_right(self)
        x, _ = call(4)  # the next, smaller call succeeds
        self.assertEqual(x.shape, (rows(4), DIM))
        del x

    @device_util.DeviceTestCase.require_gpu
    def test_output_beyond_free_memory(self):
        ballast = [tf.zeros([6 * GIB // 4], tf.float32) for _ in range(5)]  # 30 GiB held
        self.assertRefused(lambda: call(16), 16)
        small_call_is_right(self)
        x, _ = call(4)  # fits what is left
        self.assertEqual(x.shape, (rows(4), DIM))
        del x, ballast
        x, _ = call(16)  # and once the memory is free again, the refused call succeeds
        self.assertEqual(x.shape, (rows(16), DIM))

    @device_util.DeviceTestCase.require_gpu
    @device_util.DeviceTestCase.require_xla
    def test_under_xla(self):
        self.assertTrue(_load.HAS_XLA)
        big = tf.function(lambda: call(48), jit_compile=True)
        small = tf.function(lambda: call(4), jit_compile=True)
        self.assertRefused(big, 48, xla=True)
        small_call_is_right(self)
        x, _ = small()
        self.assertEqual(x.shape, (rows(4), DIM))
        with tf.device("/CPU:0"):
            cx, _ = tf_onthefly.random_batch(8, DIM, seed=1, step=2)
        self.assertAllEqual(x[:8], cx)  # the compiled call's values are the contract's

    def test_over_the_cap_is_refused_before_allocating(self):
        """Past the cap the call is refused as an argument error, on any device, with no
        memory touched (what the memory tests above are within)."""
        with self.assertRaisesRegex(tf.errors.InvalidArgumentError, "exceeds the per-output cap"):
            tf_onthefly.random_batch(rows(64) + 1, DIM, seed=1, step=2)


if __name__ == "__main__":
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:  # before the GPU is initialised: TensorFlow gets MEMORY_LIMIT_GIB of it
        tf.config.set_logical_device_configuration(
            gpus[0], [tf.config.LogicalDeviceConfiguration(memory_limit=MEMORY_LIMIT_GIB * 1024)]
        )
    tf.test.main()
