"""Where MirroredStrategy places a sharded generator op and its inputs (two logical GPUs on
one card): the placer's log lines of one replica step's ops. Run on a GPU machine:

    python -m benchmarks.mirrored_placement 2>&1 | grep -E "OnTheFly|first_sample|replica_id|Recv|Send"

--smoke: without a GPU, two logical CPUs stand in for the two GPUs.
"""

import sys

import tensorflow as tf


def main():
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        kind, config = "GPU", [tf.config.LogicalDeviceConfiguration(memory_limit=8192)] * 2
    elif "--smoke" in sys.argv:
        kind, config = "CPU", [tf.config.LogicalDeviceConfiguration()] * 2
    else:
        print("no GPU (--smoke runs on two logical CPUs)")
        return 1
    tf.config.set_logical_device_configuration(tf.config.list_physical_devices(kind)[0], config)
    tf.debugging.set_log_device_placement(True)

    import tf_onthefly
    from tf_onthefly import data

    strategy = tf.distribute.MirroredStrategy([d.name for d in tf.config.list_logical_devices(kind)])
    with strategy.scope():
        step = tf.Variable(0, dtype=tf.int64)
    shard = data.sharded(lambda s, **kw: tf_onthefly.teacher_task(64, 16, seed=1, step=s, **kw), 64)

    @tf.function
    def replica_step():
        features, labels = shard(step.read_value())
        return tf.reduce_sum(features)

    out = strategy.run(replica_step)
    print("per-replica sums:", [float(t) for t in strategy.experimental_local_results(out)])
    print("devices of the outputs:", [t.device for t in strategy.experimental_local_results(out)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
