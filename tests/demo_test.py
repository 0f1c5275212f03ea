"""The README's demo runs end to end (a few steps, on the test's device)."""

import math

import tensorflow as tf

from tf_onthefly import demo

import device_util


class DemoTest(device_util.DeviceTestCase):
    def test_trains(self):
        loss, rate = demo.train(device_util.device(), steps=60, batch_size=32, feature_dim=16, seed=1, log_every=20)
        self.assertTrue(math.isfinite(loss))
        self.assertNear(loss, math.log(2), 0.05)  # random labels: the loss sits at ln 2
        self.assertGreater(rate, 0)


if __name__ == "__main__":
    tf.test.main()
