"""The golden cases (tests/goldens.py) through one front end, in a process of its own (so
each framework is imported alone: a CUDA 13 PyTorch imported after TensorFlow cannot use
its GPU, docs/torch.md), printing one JSON line: case name -> digest of its outputs.

    python tests/framework_batches.py --framework=jax --device=cpu
    bazel run //tests:golden_digests      # = --framework=tensorflow --print-digests, this checkout

tests/frameworks_test.py runs it once per framework and compares.
"""

import argparse
import json

import goldens  # noqa: E402


def tensorflow_batches(device):
    import tensorflow as tf

    import tf_onthefly

    def run(generator, args, seed, step):
        with tf.device(f"/{device.upper()}:0"):
            outs = tf_onthefly.GENERATORS[generator](**args, seed=seed, step=step)
        assert all(device.upper() in o.device for o in outs), [o.device for o in outs]
        return [(o.dtype.name, tuple(o.shape), o.numpy().tobytes()) for o in outs]

    return run


def jax_batches(device):
    import jax
    import numpy as np

    import tf_onthefly.jax as otf

    target = jax.devices("cuda" if device == "gpu" else "cpu")[0]

    def run(generator, args, seed, step):
        with jax.default_device(target):
            outs = jax.jit(lambda: otf.GENERATORS[generator](**args, seed=seed, step=step))()
        assert all(target in o.devices() for o in outs)
        return [(str(np.asarray(o).dtype), tuple(o.shape), np.asarray(o).tobytes()) for o in outs]

    return run


def torch_batches(device):
    import torch

    import tf_onthefly.torch as otf

    target = torch.device("cuda" if device == "gpu" else "cpu")

    def run(generator, args, seed, step):
        outs = otf.GENERATORS[generator](**args, seed=seed, step=step, device=target)
        assert all(o.device.type == target.type for o in outs)
        return [
            (
                str(o.dtype).removeprefix("torch."),
                tuple(o.shape),
                o.cpu().contiguous().view(torch.uint8).numpy().tobytes(),
            )
            for o in outs
        ]

    return run


FRAMEWORKS = {"tensorflow": tensorflow_batches, "jax": jax_batches, "torch": torch_batches}


def digests(framework: str, device: str) -> dict:
    run = FRAMEWORKS[framework](device)
    return {name: goldens.digest(run(*case)) for name, case in goldens.CASES.items()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--framework", choices=sorted(FRAMEWORKS), required=True)
    parser.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    parser.add_argument("--print-digests", action="store_true", help="as goldens.DIGESTS, to paste there")
    args = parser.parse_args()
    result = digests(args.framework, args.device)
    if args.print_digests:
        for name, d in result.items():
            print(f'    "{name}": "{d}",')
    else:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
