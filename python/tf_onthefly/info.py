"""Version and build report: tf-onthefly info, python -m tf_onthefly.info"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def report() -> dict:
    import tensorflow as tf

    from tf_onthefly import _build_info, _variants
    from tf_onthefly._version import __version__

    supported = sorted(_variants.VARIANTS, key=lambda v: tuple(map(int, v.split("."))))
    try:
        from tf_onthefly import _load  # checks the version, loads the library

        loaded = f"yes: {os.path.basename(_load.VARIANT['library'])} (built against TensorFlow {_load.VARIANT['tf']})"
        xla = (
            "yes (jit_compile, Keras jit_compile='auto' on GPUs)"
            if _load.HAS_XLA
            else f"no: the op library for TensorFlow {_load.VARIANT['minor']} has no XLA kernels "
            f"(they need TensorFlow 2.20 or newer); generation runs as TensorFlow kernels"
        )
        usable, where = _load.gpu_kernels()
        gpu_kernels = f"yes: CUDA runtime from {where}" if usable else f"not available: {where}"
    except ImportError as e:  # keep reporting: this is what the user needs to see
        loaded, xla, gpu_kernels = f"no: {e}", "no", "no"
    gpus = tf.config.list_physical_devices("GPU")
    return {
        "tf_onthefly": __version__,
        "TensorFlow found": tf.__version__,
        "TensorFlow supported": ", ".join(
            f"{v} (XLA: {'yes' if _variants.VARIANTS[v]['xla'] else 'no'})" for v in supported
        ),
        "op library loads": loaded,
        "XLA kernels": xla,
        "GPU kernels": gpu_kernels,
        "CUDA version of the kernels": _build_info.CUDA_VERSION,
        "GPU architectures compiled in": ", ".join(_build_info.CUDA_ARCHS)
        + f" (+ PTX for {_build_info.CUDA_ARCHS[-1]})",
        "GPU visible": ", ".join(g.name for g in gpus) if gpus else "no",
        "location": os.path.dirname(os.path.abspath(__file__)),
    }


def main() -> int:
    rows = report()
    width = max(map(len, rows))
    for k, v in rows.items():
        print(f"{k:<{width}}  {v}")
    return 0 if rows["op library loads"].startswith("yes") else 1


if __name__ == "__main__":
    sys.exit(main())
