"""Where MirroredStrategy places a sharded generator op and its inputs (two logical GPUs on
one card): the placer's log lines of one replica step's ops. Run on a GPU machine:

    python3 tools/mirrored_placement.py 2>&1 | grep -E "OnTheFly|first_sample|replica_id|Recv|Send"
"""

import tensorflow as tf

gpu = tf.config.list_physical_devices("GPU")[0]
tf.config.set_logical_device_configuration(gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=8192)] * 2)
tf.debugging.set_log_device_placement(True)

import tf_onthefly  # noqa: E402
from tf_onthefly import data  # noqa: E402

strategy = tf.distribute.MirroredStrategy([d.name for d in tf.config.list_logical_devices("GPU")])
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
