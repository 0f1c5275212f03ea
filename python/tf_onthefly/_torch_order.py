"""Whether PyTorch can use its GPU in a process that imported TensorFlow first.

TensorFlow's libtensorflow_framework.so.2 is loaded with global symbol visibility and exports
the CUDA runtime's entry points (forwarding to the CUDA 12 runtime TensorFlow was built
with). A PyTorch built for another CUDA major (CUDA 13: torch 2.11's cu130 wheels) imported
after it binds its runtime calls (cudaGetDeviceProperties, cudaLaunchKernelExC, ...) to
those exports and calls the CUDA 12 runtime with CUDA 13 structures: devices report 1
multiprocessor, and torch's random-number kernels die with "Floating point exception".
Imported first, torch binds to its own runtime and both work. Only the import order matters.

`check_torch_import_order(who)` raises TorchImportOrderError where that happened; every place
where tf_onthefly meets PyTorch calls it (the device-array bridge; a PyTorch front end). It
imports neither framework: it reads what the process has imported already.
"""

import sys

FIX = "import torch before tensorflow"


class TorchImportOrderError(RuntimeError):
    """PyTorch was imported after TensorFlow and was built for another CUDA major."""


def _major(version) -> str:
    return str(version).split(".")[0] if version else ""


def cuda_versions():
    """(TensorFlow's CUDA version, PyTorch's) of the imported frameworks; "" where a framework
    is not imported or has no CUDA."""
    tf, torch = sys.modules.get("tensorflow"), sys.modules.get("torch")
    tf_cuda = torch_cuda = ""
    try:
        if tf is not None:
            info = tf.sysconfig.get_build_info()
            tf_cuda = info.get("cuda_version", "") if info.get("is_cuda_build", True) else ""
    except Exception:  # noqa: BLE001 - a partly imported TensorFlow: nothing to compare
        tf_cuda = ""
    try:
        torch_cuda = (torch.version.cuda or "") if torch is not None else ""
    except Exception:  # noqa: BLE001 - a partly imported torch
        torch_cuda = ""
    return tf_cuda, torch_cuda


def import_order() -> list:
    """The modules of the process in the order they were first imported."""
    return list(sys.modules)


def check_torch_import_order(who: str) -> None:
    """Raises TorchImportOrderError (saying "import torch before tensorflow") if PyTorch was
    imported after TensorFlow and their CUDA majors differ; returns otherwise."""
    names = import_order()
    if "torch" not in names or "tensorflow" not in names:
        return
    if names.index("torch") < names.index("tensorflow"):
        return
    tf_cuda, torch_cuda = cuda_versions()
    if not tf_cuda or not torch_cuda or _major(tf_cuda) == _major(torch_cuda):
        return
    raise TorchImportOrderError(
        f"{who}: PyTorch (built for CUDA {torch_cuda}) was imported after TensorFlow (built for CUDA "
        f"{tf_cuda}). TensorFlow exports its CUDA {_major(tf_cuda)} runtime to the whole process, and a "
        f"PyTorch imported later calls it with CUDA {_major(torch_cuda)} structures: wrong device properties, "
        f'then crashes ("Floating point exception") in torch\'s GPU code. Fix: {FIX} (and before '
        f"tf_onthefly), in a new process."
    )
