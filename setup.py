"""The wheel's dynamic metadata and binary layout (pyproject.toml has the static part).

Runs in the staging folder build_pip_pkg.sh prepares: tf_onthefly/ holds the package's
modules (bench/: the input benchmark), _build_info.py, _variants.py (the TensorFlow versions
the wheel has op libraries for) and the libraries. From them: the version, the extras'
TensorFlow range, and a py3-none-<platform> tag (the libraries link no libpython; auditwheel
then checks the symbol versions and writes the manylinux tag).
"""

import os
import runpy

from setuptools import setup
from setuptools.dist import Distribution

try:
    from setuptools.command.bdist_wheel import bdist_wheel  # setuptools >= 70.1
except ImportError:
    from wheel.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.join(HERE, "tf_onthefly")
if not os.path.exists(os.path.join(PKG, "_variants.py")):
    raise SystemExit(
        "tf-onthefly's wheel holds op libraries that Bazel builds: run `bash build_pip_pkg.sh dist` "
        "(docs/packaging.md) rather than building this folder directly."
    )

VERSION = runpy.run_path(os.path.join(PKG, "_version.py"))["__version__"]
MINORS = sorted(
    runpy.run_path(os.path.join(PKG, "_variants.py"))["VARIANTS"], key=lambda v: tuple(map(int, v.split(".")))
)
_major, _minor = MINORS[-1].split(".")
TF_RANGE = f">={MINORS[0]},<{_major}.{int(_minor) + 1}"
# The JAX releases whose XLA accepts the core's handlers (XLA FFI API 0.1) and have jax.ffi,
# and the PyTorch releases with torch.library.register_fake (docs/jax.md, docs/torch.md).
JAX_RANGE = "jax>=0.5"
TORCH_RANGE = "torch>=2.4"
CUDA12_RUNTIME = "nvidia-cuda-runtime-cu12>=12.1; sys_platform == 'linux' and platform_machine == 'x86_64'"
# Where the project is published, given by the release build (the repository names no
# host of its own): without it the wheel carries no project URLs rather than made-up ones.
URL = os.environ.get("OTF_PROJECT_URL", "")


class BinaryDistribution(Distribution):
    """Platform-specific: the package carries shared libraries."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    """py3-none-<platform>: one wheel for every CPython (no libpython linked)."""

    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        _, _, platform = super().get_tag()
        return "py3", "none", platform


setup(
    version=VERSION,
    packages=["tf_onthefly", "tf_onthefly.bench", "tf_onthefly.jax", "tf_onthefly.testing", "tf_onthefly.torch"],
    package_data={
        "tf_onthefly": [
            "*.so",
            "include/tf_ops/common/*.h",
            "include/tf_ops/common/cuda_runtime.cc",
            "include/tf_ops/sdk/*.h",
            "include/third_party/cuda/*.h",
        ]
    },
    include_package_data=False,
    zip_safe=False,
    distclass=BinaryDistribution,
    cmdclass={"bdist_wheel": PlatformWheel},
    extras_require={
        # TensorFlow's standard build (GPU-capable on Linux; CUDA libraries from the system)
        "gpu": [f"tensorflow{TF_RANGE}"],
        # ... with the CUDA libraries from PyPI
        "and-cuda": [f"tensorflow[and-cuda]{TF_RANGE}"],
        # the CPU-only build: the CPU kernels; the GPU kernels report themselves unavailable
        "cpu": [f"tensorflow-cpu{TF_RANGE}"],
        # The JAX and PyTorch front ends (no TensorFlow; docs/jax.md, docs/torch.md): the
        # framework for the CPU (its own CUDA install for a GPU: jax[cuda12], a CUDA torch),
        # and a CUDA 12 runtime for the core's GPU kernels (CUDA 12 builds), which finds it
        # in site-packages whatever CUDA the framework itself brings.
        "jax": [JAX_RANGE, CUDA12_RUNTIME],
        "torch": [TORCH_RANGE, CUDA12_RUNTIME],
    },
    project_urls=(
        {
            "Homepage": URL,
            "Documentation": f"{URL}/tree/main/docs",
            "Source": URL,
            "Issues": f"{URL}/issues",
        }
        if URL
        else {}
    ),
)
