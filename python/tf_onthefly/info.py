"""Version and build report: python -m tf_onthefly.info"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def report() -> dict:
    import tensorflow as tf

    from tf_onthefly import _build_info
    from tf_onthefly._version import __version__

    try:
        from tf_onthefly import _load  # noqa: F401  (checks the version, loads the library)
        loaded = "yes"
    except ImportError as e:  # keep reporting: this is what the user needs to see
        loaded = f"no: {e}"
    gpus = tf.config.list_physical_devices("GPU")
    return {
        "tf_onthefly": __version__,
        "TensorFlow built against": _build_info.TF_VERSION,
        "TensorFlow found": tf.__version__,
        "op library loads": loaded,
        "CUDA version of the kernels": _build_info.CUDA_VERSION,
        "GPU architectures compiled in": ", ".join(_build_info.CUDA_ARCHS) + f" (+ PTX for {_build_info.CUDA_ARCHS[-1]})",
        "GPU visible": ", ".join(g.name for g in gpus) if gpus else "no",
        "location": os.path.dirname(os.path.abspath(__file__)),
    }


def main() -> int:
    rows = report()
    width = max(map(len, rows))
    for k, v in rows.items():
        print(f"{k:<{width}}  {v}")
    return 0 if rows["op library loads"] == "yes" else 1


if __name__ == "__main__":
    sys.exit(main())
