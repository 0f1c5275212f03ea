"""Training integration: three ways to feed a model, all resumable from (seed, step).

1. Simple path, Python or NumPy batches:
       ds = tf_onthefly.data.from_python(gen_fn, output_signature)
   Every batch is checked against the signature; drift is reported with the field, the
   expected and actual shape/dtype and the batch number. Prefetch on by default.

2. Native op on the host, inside tf.data (parallel, no Python on the hot path):
       ds = tf_onthefly.data.host_dataset(lambda step: tf_onthefly.teacher_task(256, 16, 1, step))

3. GPU-native: the batch is generated inside the training step, on the step's device;
   the dataset only ticks (8 bytes a step) and no batch data crosses host to device:
       model = tf_onthefly.data.GeneratorModel(model, lambda step: tf_onthefly.random_batch(...))
       model.compile(...)
       model.fit(tf_onthefly.data.device_dataset(), steps_per_epoch=1000, epochs=3)
   The position in the data is the model's own `data_step` variable: tf.train.Checkpoint
   and Keras BackupAndRestore save it with the weights, so a restored run continues with
   exactly the batches an uninterrupted run would have seen. For custom loops,
   `DataPosition` is the same counter as a tf.Module. `BackupAndRestore` here is Keras's
   callback with backups that a killed process cannot leave half written.

docs/training.md explains the choices and how path 3 compares with copying batches.
"""

import atexit
import contextlib
import gc
import itertools
import json
import os
import re
import shutil
import sys
import threading
import time
import weakref
from typing import Any, Callable, Iterable, Optional

import numpy as np
import tensorflow as tf

from tf_onthefly import _args

AUTOTUNE = tf.data.AUTOTUNE


class SignatureDriftError(ValueError):
    """A Python generator produced a batch that does not match its output signature."""


def _field_names(signature):
    """'features', 'labels' for a pair; dict keys; else index paths like '[0][1]'."""
    flat = tf.nest.flatten(signature)
    if isinstance(signature, dict):
        return [str(k) for k in sorted(signature)] if len(flat) == len(signature) else None
    if isinstance(signature, (tuple, list)) and len(signature) == 2 and len(flat) == 2:
        return ["features", "labels"]
    return None


def _check_field(index, name, spec, dtype_matches, dtype, shape):
    """SignatureDriftError naming the field of batch `index` whose dtype or shape is not its spec's."""
    if not dtype_matches:
        raise SignatureDriftError(
            f"batch {index}: field '{name}' has dtype {dtype}, expected {spec.dtype.name} "
            f"(shape {shape}, expected {spec.shape})"
        )
    if not spec.shape.is_compatible_with(shape):
        raise SignatureDriftError(
            f"batch {index}: field '{name}' has shape {shape}, expected {spec.shape} (dtype {dtype})"
        )


def _leaves(signature, batch, index):
    """The batch's values at the signature's TensorSpecs, in tf.nest order. What stands where
    a spec stands is one field, whatever it is (a list is a field's values, as for
    np.asarray, not a structure); above the specs, the batch must have the signature's
    structure (tuples and lists alike, a dict's keys)."""
    if isinstance(signature, tf.TypeSpec):
        return [batch]
    if isinstance(signature, dict):
        if not isinstance(batch, dict) or set(batch) != set(signature):
            got = sorted(map(str, batch)) if isinstance(batch, dict) else type(batch).__name__
            raise SignatureDriftError(
                f"batch {index}: structure differs from the output signature: expected a dict with keys "
                f"{sorted(map(str, signature))}, got {got}"
            )
        return [leaf for key in sorted(signature) for leaf in _leaves(signature[key], batch[key], index)]
    if not isinstance(batch, (tuple, list)) or len(batch) != len(signature):
        got = f"{len(batch)} values" if isinstance(batch, (tuple, list)) else type(batch).__name__
        raise SignatureDriftError(
            f"batch {index}: structure differs from the output signature: expected {len(signature)} values "
            f"(a tuple or list), got {got}"
        )
    return [leaf for spec, value in zip(signature, batch) for leaf in _leaves(spec, value, index)]


def _check_batch(batch, signature, names, index):
    """The batch's fields as NumPy arrays (an array the generator yielded is that array),
    each checked against its spec; SignatureDriftError names the field and the batch."""
    arrays = []
    for i, (spec, value) in enumerate(zip(tf.nest.flatten(signature), _leaves(signature, batch, index))):
        name = names[i] if names else f"output {i}"
        try:
            arr = np.asarray(value)
        except Exception as e:  # a ragged list, an __array__ that raises: name where it happened
            raise SignatureDriftError(
                f"batch {index}: field '{name}' cannot become an array ({type(e).__name__}: {e}); expected "
                f"{spec.dtype.name} of shape {spec.shape}"
            ) from e
        _check_field(index, name, spec, arr.dtype == spec.dtype.as_numpy_dtype, str(arr.dtype), list(arr.shape))
        arrays.append(arr)
    return arrays


# from_generator's conversion of a batch uses the memory of a NumPy array aligned to this
# many bytes (TensorFlow's EIGEN_MAX_ALIGN_BYTES) in place, keeping the array alive, and
# copies any other array at once (SimplePathHandOverTest checks both on every TensorFlow).
_TF_ALIGN = 64


def _aligned_copy(array):
    """A copy of `array` in memory TensorFlow uses in place: the batch's one copy."""
    buffer = np.empty(array.nbytes + _TF_ALIGN, np.uint8)
    start = -buffer.ctypes.data % _TF_ALIGN
    copy = buffer[start : start + array.nbytes].view(array.dtype).reshape(array.shape)
    np.copyto(copy, array)
    return copy


def _references(arrays, i):
    return sys.getrefcount(arrays[i])


# What _references counts for an array held by nothing but the list (the calling code the same).
_ONLY_THE_LIST = _references([np.empty(0)], 0)


def _handed_over(arrays):
    """Replaces every array of the list that its generator could still change, and that
    TensorFlow would not copy, by a copy.

    TensorFlow makes a tensor of an aligned array by using its memory, so a generator that
    refills the array it yielded would change batches already handed out. Copied here: an
    aligned array unless it was handed over whole, i.e. it owns its memory (not a view, not
    memory of another object or of native code) and nothing but this list refers to it (no
    reference, no weak reference: the batch that held it is gone). Not copied: other arrays
    (TensorFlow copies them itself, at once) and object arrays (strings: TensorFlow makes
    new string tensors of them at once)."""
    for i in range(len(arrays)):
        a = arrays[i]
        in_place = not a.dtype.hasobject and a.ctypes.data % _TF_ALIGN == 0
        handed_over = a.flags.owndata and weakref.getweakrefcount(a) == 0
        del a
        if in_place and not (handed_over and _references(arrays, i) <= _ONLY_THE_LIST):
            arrays[i] = _aligned_copy(arrays[i])
    return arrays


_END = object()


class _GeneratorCalls:
    """Calls into from_python's generators, so that the interpreter's exit can wait for them.

    A prefetching pipeline's iterator deleted while its prefetch thread waits for the GIL to
    call the generator never returns: the deleting thread holds the GIL while TensorFlow's
    prefetch iterator waits for that thread. An iterator left to the exit's garbage collection
    hung that way in 6 of 15 runs of a short script. So at exit,
    before that collection, every generator ends at its next call, and the exit waits, the
    GIL released, until no call has run for a moment (30 s at most: a call in progress must
    finish first). Then it collects the garbage: pipelines the program let go of, but which
    sit in reference cycles (a tf.function that captured its iterator), are destroyed while
    Python can still run their generators' cleanup; destroyed after Python's shutdown, each
    makes TensorFlow log "Error occurred when finalizing GeneratorDataset iterator".
    tests/data_test.py, SimplePathExitTest."""

    QUIET_S, LIMIT_S = 0.2, 30.0

    def __init__(self):
        self.exiting = threading.Event()
        self._lock = threading.Lock()
        self._running = 0
        self._last = None  # when the last call ended (None: no call yet)

    def __enter__(self):
        with self._lock:
            self._running += 1

    def __exit__(self, *exc):
        with self._lock:
            self._running -= 1
            self._last = time.monotonic()

    def end_all(self):
        self.exiting.set()
        deadline = time.monotonic() + self.LIMIT_S
        while time.monotonic() < deadline:
            with self._lock:
                if self._running == 0 and (self._last is None or time.monotonic() - self._last > self.QUIET_S):
                    break
            time.sleep(0.01)
        gc.collect()


_GENERATOR_CALLS = _GeneratorCalls()
atexit.register(_GENERATOR_CALLS.end_all)


def from_python(
    generator_fn: Callable[[], Iterable[Any]],
    output_signature,
    *,
    num_batches: Optional[int] = None,
    prefetch: bool = True,
) -> tf.data.Dataset:
    """The simple path: batches from a Python generator function, checked as they come.

    Args:
      generator_fn: a callable returning an iterator of batches (NumPy arrays or
        anything np.asarray takes), e.g. a generator function.
      output_signature: nested tf.TensorSpec, as for tf.data.Dataset.from_generator.
      num_batches: if given, an integer >= 0 (0: an empty dataset): the dataset has
        exactly this many batches, and a generator that stops before raises
        SignatureDriftError ("stopped after 7 batches, expected 10") at that point instead
        of silently ending the epoch early. Anything else (a float, a bool, a negative
        number) is refused with an InvalidArgumentError naming num_batches.
      prefetch: overlap generation with training (tf.data.AUTOTUNE).

    A batch that does not match raises SignatureDriftError naming the field, the
    expected and actual shape and dtype and the batch number; an exception raised by the
    generator itself comes through with its traceback (TensorFlow wraps it in an
    InvalidArgumentError/UnknownError whose message holds the original traceback).

    A batch never changes after it is yielded, so a generator may refill its arrays for
    the next batch: each field is copied once, by TensorFlow or, for an array whose memory
    TensorFlow would otherwise use in place (64-byte aligned), here, unless the generator
    handed that array over whole (it owns its memory and nothing else refers to it once the
    batch is taken, e.g. `yield rng.random(shape), labels`).
    """
    if num_batches is not None:
        num_batches = _args.int_value(num_batches, "from_python: num_batches")
        if num_batches < 0:
            _args.refuse(
                "from_python: num_batches", f"must be >= 0 (None: as many as the generator yields), got {num_batches}"
            )
    names = _field_names(output_signature)

    def checked():
        with _GENERATOR_CALLS:
            batches = iter(generator_fn())
        for index in itertools.count():
            with _GENERATOR_CALLS:
                if _GENERATOR_CALLS.exiting.is_set() or (num_batches is not None and index >= num_batches):
                    return
                batch = next(batches, _END)
                if batch is _END:
                    if num_batches is not None and index < num_batches:
                        raise SignatureDriftError(
                            f"batch {index}: the generator stopped after {index} batches, expected {num_batches}"
                        )
                    return
                arrays = _check_batch(batch, output_signature, names, index)
                del batch  # a batch structure the generator does not keep goes, and with it its references
                batch = tf.nest.pack_sequence_as(output_signature, _handed_over(arrays))
                del arrays
            yield batch

    ds = tf.data.Dataset.from_generator(checked, output_signature=output_signature)
    return ds.prefetch(AUTOTUNE) if prefetch else ds


def host_dataset(
    generator: Callable[[tf.Tensor], Any],
    *,
    start_step: int = 0,
    steps: Optional[int] = None,
    num_parallel_calls=AUTOTUNE,
    prefetch: bool = True,
) -> tf.data.Dataset:
    """Native generator op on the host, inside tf.data: batch i is generator(start_step + i).

    The op runs on tf.data's CPU threads, in parallel, deterministic order. Resume by
    passing the saved step as start_step, or checkpoint the iterator
    (tf.train.Checkpoint(iterator=it)).
    """
    stop = None if steps is None else start_step + steps
    ds = tf.data.Dataset.range(start_step, stop if stop is not None else np.iinfo(np.int64).max)
    ds = ds.map(generator, num_parallel_calls=num_parallel_calls, deterministic=True)
    return ds.prefetch(AUTOTUNE) if prefetch else ds


def device_dataset(steps: Optional[int] = None, ticks_per_step: int = 1) -> tf.data.Dataset:
    """The tick dataset for GeneratorModel: int64 step numbers, 8 bytes each, nothing else.

    The batch itself is generated inside the training step from the model's data_step.
    Under a tf.distribute strategy, pass ticks_per_step=strategy.num_replicas_in_sync, so
    the strategy can hand every replica one tick (its batch is made by `sharded`).
    """
    ds = tf.data.Dataset.range(np.iinfo(np.int64).max if steps is None else steps)
    if ticks_per_step > 1:
        ds = ds.map(lambda s: tf.fill([ticks_per_step], s))
    return ds.prefetch(AUTOTUNE)


def replica_shard(global_batch_size: int):
    """(first_sample, num_samples) of the current replica's slice of the global batch.

    Replica r of R (tf.distribute's replica_id_in_sync_group, global across workers)
    gets samples [r * B/R, (r + 1) * B/R). Outside any strategy: (0, B).
    """
    ctx = tf.distribute.get_replica_context()
    replicas = ctx.num_replicas_in_sync if ctx is not None else 1
    if global_batch_size % replicas:
        raise ValueError(f"global_batch_size {global_batch_size} is not divisible by the {replicas} replicas in sync")
    per_replica = global_batch_size // replicas
    replica = ctx.replica_id_in_sync_group if ctx is not None else 0
    static = tf.get_static_value(replica)
    if static is not None:
        # Known when the step is traced (MirroredStrategy: a constant per replica): a Python
        # int, so first_sample (a host-memory input of the GPU kernels) is an int32 constant
        # in host memory. Computed from the replica id as an int64 on the GPU it would cost
        # a device-to-host copy and a wait every step (two per step on two replicas, counted
        # on an H200).
        return int(static) * per_replica, per_replica
    # The replica id is an int32 tensor; int32 arithmetic on the GPU device runs in host
    # memory, where the kernels read first_sample. int64 only where int32 cannot hold it.
    dtype = tf.int32 if global_batch_size - per_replica <= _args.INT32_MAX else tf.int64
    return tf.cast(replica, dtype) * per_replica, per_replica


def sharded(generator: Callable[..., Any], global_batch_size: int) -> Callable[[tf.Tensor], Any]:
    """Makes `generator(step, first_sample=, num_samples=)` generate only this replica's shard.

        gen = data.sharded(lambda step, **shard: tf_onthefly.teacher_task(
            1024, 16, seed=1, step=step, **shard), global_batch_size=1024)

    Each replica then generates its B/R samples of the global batch, keyed on the global
    sample index: the same global batch for any number of replicas and workers.
    """

    def shard_generator(step):
        first, num = replica_shard(global_batch_size)
        return generator(step, first_sample=first, num_samples=num)

    return shard_generator


def distributed_host_dataset(strategy, generator: Callable[..., Any], global_batch_size: int, *, start_step: int = 0):
    """Native op on the host, distributed: each input pipeline generates only its replicas' shards.

    Uses strategy.distribute_datasets_from_function. Pipeline p (one per worker) serves its
    L local replicas; element k of the pipeline is step start_step + k // L for global
    replica p * L + k % L, generated as samples [(p L + j) B/R, (p L + j + 1) B/R).
    `generator(step, first_sample=, num_samples=)` as for `sharded`.
    """

    def dataset_fn(ctx: tf.distribute.InputContext):
        replicas = ctx.num_replicas_in_sync
        local = replicas // ctx.num_input_pipelines
        per_replica = ctx.get_per_replica_batch_size(global_batch_size)
        base = ctx.input_pipeline_id * local

        def element(k):
            step = start_step + k // local
            first = (base + k % local) * per_replica
            return generator(step, first_sample=first, num_samples=per_replica)

        ds = tf.data.Dataset.range(np.iinfo(np.int64).max).map(element, num_parallel_calls=AUTOTUNE, deterministic=True)
        return ds.prefetch(AUTOTUNE)

    return strategy.distribute_datasets_from_function(dataset_fn)


def _step_device(generator):
    """Where the step counter lives: on the host for a generator that reads its step there
    (tf_onthefly.interop.DeviceBridge: `step_on_host`), where a counter on the GPU would cost
    a device-to-host wait a batch; else where TensorFlow places it (the GPU ops read it on
    the device). Under a distribution strategy, the strategy places it."""
    on_host = getattr(generator, "step_on_host", False) and not tf.distribute.has_strategy()
    return tf.device("/CPU:0") if on_host else contextlib.nullcontext()


def _generate_and_advance(generator, step_variable):
    """generator(current step), then step += 1 once the batch exists."""
    batch = generator(tf.convert_to_tensor(step_variable))
    with tf.control_dependencies(tf.nest.flatten(batch)):
        step_variable.assign_add(1)
    return batch


class DataPosition(tf.Module):
    """The position in the data for custom training loops: a checkpointable step counter.

        pos = DataPosition(generator)
        ckpt = tf.train.Checkpoint(model=model, optimizer=opt, position=pos)
        @tf.function
        def train_step():
            x, y = pos.next_batch()     # generator(pos.step), then step += 1
            ...

    Many steps per call (one tf.function call, one graph loop, no Python per step):

        @tf.function
        def train_steps(n):
            return pos.run_steps(lambda batch: apply_gradients(*batch), n)
    """

    def __init__(self, generator: Callable[[tf.Tensor], Any], start_step: int = 0, name=None):
        super().__init__(name=name)
        self.generator = generator
        with _step_device(generator):
            self.step = tf.Variable(start_step, dtype=tf.int64, trainable=False, name="data_step")

    def next_batch(self):
        return _generate_and_advance(self.generator, self.step)

    def run_steps(self, step_fn: Callable[[Any], Any], num_steps):
        """Runs `step_fn(next_batch())` `num_steps` times (>= 1) in one graph loop, inside
        the calling tf.function; returns the last step's result.

        Each iteration generates the batch of the current step and advances the position,
        exactly as `num_steps` calls of a function that calls `next_batch()` would, so runs
        resume the same whatever the number of steps per call. The loop runs on the step's
        device: generation, the step and the counter stay there, and the host only
        launches the loop once per call.
        """

        def one_step():
            out = step_fn(self.next_batch())
            return tf.constant(0) if out is None else out  # a loop variable must be a tensor

        # The loop's counter is int32: TensorFlow keeps the int32 tensors of a GPU loop in
        # host memory, where the loop is controlled. An int64 counter lives on the GPU and
        # its condition costs a device-to-host copy and a wait every step (on an H200, 104
        # against 53 us a step at a tiny batch). The batches come from the int64 data_step.
        n = _loop_count(num_steps, "DataPosition.run_steps")
        with tf.control_dependencies([n]):  # a refused count runs no step
            first = one_step()
        _, last = tf.while_loop(lambda i, _: i < n, lambda i, _: (i + 1, one_step()), (tf.constant(1, tf.int32), first))
        return last


def _loop_count(num_steps, what):
    """num_steps as an int32 on the host, refused (not wrapped) from 2^31 on. Under XLA,
    which compiles assertions away, a tensor count from 2^31 on counts to 2^31 - 1."""
    static = tf.get_static_value(num_steps)
    if static is not None:
        if int(static) >= 2**31:
            raise ValueError(f"{what}: num_steps must be below 2^31, got {int(static)}")
        return tf.constant(int(static), tf.int32)
    with tf.device("/CPU:0"):
        wide = tf.cast(num_steps, tf.int64)
        check = tf.debugging.assert_less(
            wide, tf.constant(2**31, tf.int64), message=f"{what}: num_steps must be below 2^31"
        )
        with tf.control_dependencies([check]):
            return tf.cast(tf.minimum(wide, 2**31 - 1), tf.int32)


# The most bytes one generator call makes for GeneratorModel's steps_in_one_call="auto": an
# execution's batches live together until its last step. Small batches are the ones whose
# step a launch a step costs (docs/training.md, "Many steps per call").
STEPS_IN_ONE_CALL_BYTES = 256 << 20


class GeneratorModel(tf.keras.Model):
    """Wraps any Keras model so model.fit trains on batches generated inside the step.

    Args:
      model: the model to train (its inputs are the generator's first output).
      generator: step (int64 scalar tensor) -> (x, y) or (x, y, sample_weight); any
        tf_onthefly generator op, or a function of several.
      eval_generator: the same for evaluate()/validation, called with the step numbers the
        validation dataset yields (device_dataset(n) gives 0..n-1). Default: generator.
      start_step: the first data step of a fresh run.
      steps_in_one_call: with steps_per_execution > 1 under XLA (jit_compile, no
        tf.distribute strategy), make an execution's batches in one generator call,
        `generator(steps)` with the vector of its steps, and give step k the k-th batch:
        the same batches as a call a step, one GPU launch for them all, which small
        batches feel (docs/training.md, "Many steps per call"). "auto" (default): where the
        generator gives, for a vector of two steps, each output stacked along a new first
        dimension, bit for bit the two steps' batches (every tf_onthefly generator op
        does, and a function that only calls them), and the execution's batches fit
        STEPS_IN_ONE_CALL_BYTES; checked once, when the train function is made. True: the
        same, and a generator that fails the check is refused. False: a call a step.

    `data_step` (a non-trainable int64 model weight) is the position in the data: saved
    and restored with the model by tf.train.Checkpoint and BackupAndRestore. predict()
    and __call__ take real inputs and are the wrapped model's.
    """

    def __init__(
        self,
        model: tf.keras.Model,
        generator: Callable,
        eval_generator: Optional[Callable] = None,
        start_step: int = 0,
        steps_in_one_call="auto",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if steps_in_one_call not in ("auto", True, False):
            raise ValueError(
                f"GeneratorModel: steps_in_one_call must be 'auto', True or False, got {steps_in_one_call!r}"
            )
        self.model = model
        self.generator = generator
        self.eval_generator = eval_generator or generator
        self.steps_in_one_call = steps_in_one_call
        # Every replica reads the same step; one replica's increment is the update (under
        # a tf.distribute strategy this is a mirrored variable).
        with _step_device(generator):
            self.data_step = self.add_weight(
                name="data_step",
                shape=(),
                dtype="int64",
                trainable=False,
                initializer=tf.keras.initializers.Constant(start_step),
                aggregation="only_first_replica",
            )
        # Built when the wrapped model is (BackupAndRestore, for one, needs that before fit).
        self.built = bool(getattr(model, "built", False))

    def call(self, inputs, training=False):
        if getattr(inputs, "shape", None) is not None and len(inputs.shape) <= 1:
            # A tick, not a batch (Keras builds models by calling them on one element of
            # the dataset; model inputs are batches, rank >= 2): the model's input is the
            # generated batch of the current step.
            inputs = tf.nest.flatten(self.generator(tf.convert_to_tensor(self.data_step)))[0]
        return self.model(inputs, training=training)

    def _symbolic_build(self, iterator=None, data_batch=None):
        # Keras builds the compiled loss and metrics from one dataset element; ours are
        # ticks, so build from one generated batch instead (Keras 3 internal hook).
        del iterator, data_batch
        return super()._symbolic_build(data_batch=tuple(self.generator(tf.constant(0, tf.int64))))

    def compile(self, *args, jit_compile="auto", **kwargs):
        """As keras.Model.compile. jit_compile="auto" (XLA on GPUs) and True compile the
        generator ops with the step; with an op library that has no XLA kernels (TensorFlow
        before 2.20, `python -m tf_onthefly.info`), "auto" means False and True is refused."""
        from tf_onthefly import _load

        if not _load.HAS_XLA:
            if jit_compile is True:
                raise ValueError(
                    f"jit_compile=True: tf_onthefly's op library for TensorFlow {_load.VARIANT['minor']} has no "
                    f"XLA kernels (they need TensorFlow 2.20 or newer); use jit_compile=False"
                )
            jit_compile = False if jit_compile == "auto" else jit_compile
        self.__dict__.pop("_replica_functions", None)  # they call the loss and metrics compiled here
        super().compile(*args, jit_compile=jit_compile, **kwargs)

    def _next_batch(self):
        return _generate_and_advance(self.generator, self.data_step)

    def make_train_function(self, force=False):
        """With steps_per_execution > 1: one tick per execution, then that many steps in a
        graph loop. The batches come from data_step, not from the ticks, so the loop needs
        no dataset at all: the host launches one loop per execution and nothing per step.
        (Keras 3.15's own loop reads an optional element per step, which also fails under
        tf.distribute strategies: "You must feed a value for placeholder tensor".)

        With XLA and no distribution strategy, the whole loop is one XLA executable, as
        DataPosition.run_steps under jit_compile is, instead of one per step: TensorFlow's
        executor then runs one op per execution rather than a launch per step. Under a
        strategy each replica compiles its own step (train_step): strategy.run spans the
        replicas' devices, and XLA compiles one device's program."""
        if self.train_function is not None and not force:
            return self.train_function
        with self._replicas_compile_their_steps():
            super().make_train_function(force=True)
        steps = int(self.steps_per_execution)
        if steps == 1 or self.run_eagerly:
            return self.train_function
        from keras.src.backend.tensorflow.trainer import reduce_per_replica  # Keras 3 internal

        strategy = self.distribute_strategy
        whole_loop_xla = bool(self.jit_compile) and not self._replica_xla

        @tf.autograph.experimental.do_not_convert
        def one_step(tick):
            return reduce_per_replica(strategy.run(self.train_step, args=(tick,)), strategy, reduction="auto")

        if not whole_loop_xla:
            # Under a strategy with XLA, train_step compiles its replica's computation itself.
            one_step = tf.function(one_step, reduce_retracing=True, jit_compile=False)
        unrolled = max(1, min(int(getattr(self, "unrolled_steps_per_execution", 1)), steps))
        in_one_call = whole_loop_xla and self._generates_steps_in_one_call(steps)

        def run_steps(tick):
            if in_one_call:
                return self._run_steps_in_one_call(steps, unrolled)
            logs = one_step(tick)
            for _ in range((steps - 1) % unrolled):
                logs = one_step(tick)
            for _ in tf.range((steps - 1) // unrolled):
                for _ in range(unrolled):
                    logs = one_step(tick)
            return logs

        loop = tf.function(run_steps, jit_compile=True) if whole_loop_xla else run_steps

        @tf.function
        def many_steps(iterator):
            return loop(iterator.get_next())

        self.train_function = many_steps
        return self.train_function

    def _generates_steps_in_one_call(self, steps):
        """Whether an execution of `steps` steps makes its batches in one generator call
        (steps_in_one_call): the generator, called eagerly on the steps [0, 1] and on each
        alone, stacks the two batches bit for bit, and `steps` of them fit
        STEPS_IN_ONE_CALL_BYTES. A bridge of Python batches (step_on_host) never does."""
        if self.steps_in_one_call is False or getattr(self.generator, "step_on_host", False):
            if self.steps_in_one_call is True:
                raise ValueError(
                    "GeneratorModel(steps_in_one_call=True): a generator that reads its step on the host takes one step a call"
                )
            return False
        why = None
        try:
            pair = tf.nest.flatten(self.generator(tf.constant([0, 1], tf.int64)))
            alone = [tf.nest.flatten(self.generator(tf.constant(s, tf.int64))) for s in (0, 1)]
        except (tf.errors.OpError, ValueError, TypeError) as e:
            why = f"generator(steps) with a vector of two steps failed: {str(e).splitlines()[0]}"
        else:
            if len(pair) != len(alone[0]) or not all(
                p.shape[:1] == [2] and p.shape[1:] == a.shape and _same_bits(p[k], b[i])
                for k, b in enumerate(alone)
                for i, (p, a) in enumerate(zip(pair, alone[0]))
            ):
                why = "generator(steps) with a vector of two steps did not give each step's batch, stacked along a new first dimension"
        if why is not None:
            if self.steps_in_one_call is True:
                raise ValueError(f"GeneratorModel(steps_in_one_call=True): {why}")
            return False
        block = steps * sum(int(np.prod(t.shape)) * t.dtype.size for t in alone[0])
        if block > STEPS_IN_ONE_CALL_BYTES and self.steps_in_one_call == "auto":
            return False
        return True

    def _run_steps_in_one_call(self, steps, unrolled):
        """The execution's `steps` train steps on the batches of one generator call (XLA, no
        strategy); data_step advances by `steps` once they ran."""
        start = tf.convert_to_tensor(self.data_step)
        batches = self.generator(start + tf.range(steps, dtype=tf.int64))

        def one_step(k):
            batch = tuple(tf.nest.map_structure(lambda t: t[k], batches))
            return _multi_worker_logs(super(GeneratorModel, self).train_step(batch))

        logs = one_step(0)
        done = 1 + (steps - 1) % unrolled
        for k in range(1, done):
            logs = one_step(k)
        for i in tf.range((steps - 1) // unrolled):
            for u in range(unrolled):
                logs = one_step(done + i * unrolled + u)
        with tf.control_dependencies(tf.nest.flatten(logs)):
            self.data_step.assign_add(steps)
        return logs

    @property
    def _replica_xla(self):
        """XLA under a tf.distribute strategy: each replica compiles its own step.

        Keras compiles the function that calls strategy.run, which spans every replica's
        device, and XLA compiles one device's program: under MirroredStrategy it fails
        with "Trying to access resource .../replica_1 ... from device CPU:0". So under a
        strategy (Keras keeps _distribute_strategy None for a model made outside any
        strategy scope) the functions around strategy.run are not compiled, and each
        replica's step compiles what lies between its synchronisation points: the batch,
        the forward and backward pass, the loss and metrics. The gradients' all-reduce,
        the optimizer's update and data_step's increment, which synchronise the replicas
        (merge_call), run after it, uncompiled."""
        return bool(self.jit_compile) and self._distribute_strategy is not None

    @contextlib.contextmanager
    def _replicas_compile_their_steps(self):
        """Keras builds its functions around strategy.run without XLA where _replica_xla."""
        replica_xla = self._replica_xla
        if replica_xla:
            self.jit_compile = False
        try:
            yield
        finally:
            if replica_xla:
                self.jit_compile = True

    def make_test_function(self, force=False):
        if self.test_function is not None and not force:
            return self.test_function
        with self._replicas_compile_their_steps():
            return super().make_test_function(force=True)

    def make_predict_function(self, force=False):
        if self.predict_function is not None and not force:
            return self.predict_function
        with self._replicas_compile_their_steps():
            return super().make_predict_function(force=True)

    def _compiled(self, name, fn):
        """fn as a tf.function with XLA, made once per model (each replica traces its own)."""
        functions = self.__dict__.setdefault("_replica_functions", {})
        if name not in functions:
            functions[name] = tf.function(fn, jit_compile=True)
        return functions[name]

    def train_step(self, data):
        del data  # a tick: the batch is generated here, on the step's device
        if not self._replica_xla:
            return _multi_worker_logs(super().train_step(tuple(self._next_batch())))

        def forward_backward(step):
            """Keras's train_step on the batch of `step`, its update left out: the gradients."""
            applied = []
            self.optimizer.apply_gradients = applied.extend  # recorded, applied after the call
            try:
                logs = super(GeneratorModel, self).train_step(tuple(self.generator(step)))
            finally:
                del self.optimizer.apply_gradients
            if [id(v) for _, v in applied] != [id(v) for v in self.trainable_weights]:
                raise NotImplementedError(
                    "GeneratorModel with jit_compile under a tf.distribute strategy: this Keras's train_step "
                    "updates other variables than the model's trainable weights; compile with jit_compile=False"
                )
            return logs, [g for g, _ in applied]

        step = tf.convert_to_tensor(self.data_step)
        logs, gradients = self._compiled("forward_backward", forward_backward)(step)
        if gradients:
            self.optimizer.apply_gradients(zip(gradients, self.trainable_weights))
        with tf.control_dependencies(tf.nest.flatten(logs)):  # the batch was made
            self.data_step.assign_add(1)
        return _multi_worker_logs(logs)

    def test_step(self, data):
        def evaluate(data):
            step = tf.reshape(tf.cast(data, tf.int64), [-1])[0]
            return super(GeneratorModel, self).test_step(tuple(self.eval_generator(step)))

        return _multi_worker_logs(self._compiled("test_step", evaluate)(data) if self._replica_xla else evaluate(data))

    def predict_step(self, data):
        predict = super().predict_step
        return self._compiled("predict_step", predict)(data) if self._replica_xla else predict(data)


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _multi_worker_logs(logs):
    """Under MultiWorkerMirroredStrategy, Keras 3.15 reduces every log with
    strategy.reduce("MEAN", v, axis=0), which fails on scalars; give it shape [1]."""
    if isinstance(tf.distribute.get_strategy(), tf.distribute.MultiWorkerMirroredStrategy):
        return {k: tf.reshape(v, [1]) for k, v in logs.items()}
    return logs


class BackupAndRestore(tf.keras.callbacks.BackupAndRestore):
    """Keras's BackupAndRestore, with backups that survive the process being killed.

        model.fit(data.device_dataset(), epochs=10, steps_per_epoch=1000,
                  callbacks=[data.BackupAndRestore("/ckpt/run1")])

    The same arguments and behaviour as `tf.keras.callbacks.BackupAndRestore`, except how a
    backup is written. Keras overwrites `latest.weights.h5` in place and then writes the
    epoch to a second file: a process killed (SIGKILL, OOM killer, preemption without
    grace) during the first write leaves a truncated weights file the next run cannot load,
    and one killed between the two leaves new weights (and a new `data_step`) with the
    previous epoch, so the resumed run trains an extra epoch. Here each backup is written
    whole into a temporary directory, its files and the directory are fsynced, and only
    then is it renamed into place as `backup-<n>` (a rename is atomic) and the older ones
    removed: a kill at any point leaves the last complete backup, and the restarted run
    resumes from it exactly (with GeneratorModel, the weights and data position of an
    uninterrupted run, bit for bit where the kernels are deterministic). What the killed
    run trained after that backup is trained again. Leftovers of a killed write are
    removed at the next start.

    Exact resume needs `save_freq="epoch"` (the default): Keras restarts an interrupted
    epoch from its first batch, so with an integer `save_freq` a restored run trains the
    steps of the interrupted epoch already backed up once more (the batches stay those of
    `data_step`, so no batch is repeated, but the run takes more steps than planned).
    """

    _BACKUP = re.compile(r"^backup-(\d+)$")
    _TMP_PREFIX = ".tmp-backup-"

    def __init__(self, backup_dir, save_freq="epoch", delete_checkpoint=True):
        super().__init__(backup_dir, save_freq=save_freq, delete_checkpoint=delete_checkpoint)

    def _backups(self):
        """(number, path) of every complete backup, oldest first."""
        if not os.path.isdir(self.backup_dir):
            return []
        found = [(int(m.group(1)), name) for name in os.listdir(self.backup_dir) if (m := self._BACKUP.match(name))]
        return [(n, os.path.join(self.backup_dir, name)) for n, name in sorted(found)]

    def _remove_partial_writes(self):
        if os.path.isdir(self.backup_dir):
            for name in os.listdir(self.backup_dir):
                if name.startswith(self._TMP_PREFIX):
                    _rmtree(os.path.join(self.backup_dir, name))

    def on_train_begin(self, logs=None):
        self._remove_partial_writes()
        self._load_model()

    def _load_model(self):
        if not self.model.built:
            raise ValueError(
                "To use the BackupAndRestore callback, your model must be built before you call `fit()`. "
                f"Model {self.model} is unbuilt. You can build it beforehand by calling it on a batch of data."
            )
        backups = self._backups()
        if not backups:
            return
        latest = backups[-1][1]
        if self.model.optimizer is not None and not self.model.optimizer.built:
            self.model.optimizer.build(self.model.trainable_variables)  # its slots exist before loading
        self.model.load_weights(os.path.join(latest, "latest.weights.h5"))
        with open(os.path.join(latest, "training_metadata.json")) as f:
            self.model._initial_epoch = json.load(f)["epoch"]

    def _write_backup(self, directory):
        """Writes the backup's files into `directory` (not yet visible as a backup)."""
        self.model.save_weights(filepath=os.path.join(directory, "latest.weights.h5"), overwrite=True)
        with open(os.path.join(directory, "training_metadata.json"), "w") as f:
            json.dump({"epoch": self._current_epoch, "batch": self._last_batch_seen}, f)

    def _save_model(self):
        os.makedirs(self.backup_dir, exist_ok=True)
        backups = self._backups()
        number = backups[-1][0] + 1 if backups else 0
        tmp = os.path.join(self.backup_dir, f"{self._TMP_PREFIX}{number}-{os.getpid()}")
        _rmtree(tmp)
        os.makedirs(tmp)
        self._write_backup(tmp)
        for name in os.listdir(tmp):
            _fsync(os.path.join(tmp, name))
        _fsync(tmp)
        os.rename(tmp, os.path.join(self.backup_dir, f"backup-{number:012d}"))
        _fsync(self.backup_dir)  # the rename itself is durable before the old backup goes
        for _, old in backups:
            _rmtree(old)

    def on_train_end(self, logs=None):
        if self.delete_checkpoint and os.path.exists(self.backup_dir):
            _rmtree(self.backup_dir)


def _fsync(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _rmtree(path):
    shutil.rmtree(path, ignore_errors=True)
