"""What a library of generators of one's own is compiled and linked with, against the
installed package (as tf.sysconfig is for TensorFlow's custom ops):

    c++ $(python -c 'from tf_onthefly import sysconfig; print(*sysconfig.get_compile_flags())') ...

`python -m tf_onthefly.build FOLDER` does all of it in one command (tf_onthefly/build.py);
examples/external_generator/ is such a folder.

No TensorFlow flag is needed, and none is given: the SDK's headers (tf_ops/sdk/*.h) include
no TensorFlow header, and a library links only the core (libtf_onthefly_core.so, which every
TensorFlow version and the JAX and PyTorch front ends share), so one build serves every
TensorFlow the package supports. What it takes from elsewhere:
- the CUDA 12 headers TensorFlow's wheel ships (tensorflow/include/third_party/gpus/cuda),
  for the runtime types the SDK's headers name, even in a CPU-only build;
- XLA's FFI headers (xla/ffi/api/ffi.h) from the installed TensorFlow (2.20 on), for the
  XLA kernels (jit_compile); without them the library has none, and says so when loaded;
- the CUDA runtime forwarders (cuda_runtime_sources(): tf_ops/common/cuda_runtime.cc), which
  every library compiles in, hidden: its kernels then call the CUDA 12 runtime TensorFlow
  loaded (cuda_runtime.h says how it is found), not one of their own.
"""

import importlib.util
import os
import site
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORE_LIBRARY = "libtf_onthefly_core.so"

# Those of the core's own build (tf_ops/build_defs.bzl OTF_CORE_COPTS): the C++11 string
# ABI (the registration records carry it and the core refuses another), release build,
# -ffp-contract=off so float outputs match between CPU and GPU, hidden symbols (a library
# exports only what registers its generators), and no NVTX from CCCL's device-wide
# algorithms (NVTX's dlopen binds a glibc symbol version newer than the manylinux tag's).
COMMON_FLAGS = (
    "-std=c++17",
    "-D_GLIBCXX_USE_CXX11_ABI=1",
    "-DNDEBUG",
    "-O3",
    "-fPIC",
    "-fvisibility=hidden",
    "-DCCCL_DISABLE_NVTX",
    "-DNVTX_DISABLE",
)


def get_include() -> str:
    """The folder of the SDK's headers (tf_ops/sdk/*.h, tf_ops/common/*.h): the package's
    include/ folder, or in a source checkout the repository's root."""
    shipped = os.path.join(HERE, "include")
    return shipped if os.path.isdir(shipped) else os.path.dirname(os.path.dirname(HERE))


def get_lib() -> str:
    """The folder of the core library a generator library links (CORE_LIBRARY)."""
    return HERE


def _tensorflow_include() -> str:
    spec = importlib.util.find_spec("tensorflow")
    if spec is None or not spec.submodule_search_locations:
        return ""
    return os.path.join(list(spec.submodule_search_locations)[0], "include")


def cuda_include_dirs() -> list:
    """The CUDA 12 headers of TensorFlow's wheel (+ CCCL's: CUB, Thrust, libcudacxx), [] where
    the installed TensorFlow has none."""
    root = os.path.join(_tensorflow_include(), "third_party", "gpus", "cuda")
    dirs = [os.path.join(root, d) for d in ("include", "libcudacxx/include", "cub", "thrust")]
    return [d for d in dirs if os.path.isdir(d)]


def xla_ffi_include_dir() -> str:
    """The folder holding xla/ffi/api/ffi.h (the installed TensorFlow's, 2.20 on), or ""."""
    include = _tensorflow_include()
    return include if os.path.isfile(os.path.join(include, "xla", "ffi", "api", "ffi.h")) else ""


def get_compile_flags(cuda_headers: bool = True) -> list:
    """Flags for the library's C++ sources (and, with the CUDA compiler's own, its CUDA ones):
    the SDK's include folder, XLA's FFI headers where TensorFlow has them, and, with
    `cuda_headers`, TensorFlow's CUDA 12 headers (pass False where the CUDA compiler's own
    are used for every source)."""
    flags = [f"-I{get_include()}", *COMMON_FLAGS]
    if cuda_headers:
        flags += [f"-isystem{d}" for d in cuda_include_dirs()]
    ffi = xla_ffi_include_dir()
    # Only xla/ffi is included from there; -idirafter keeps TensorFlow's copies of other
    # headers (absl, Eigen, CUDA's) from standing in for the compiler's or CUDA's own.
    flags += [f"-idirafter{ffi}"] if ffi else ["-DOTF_NO_XLA_FFI"]
    return flags


def get_link_flags() -> list:
    """Flags that link a library of generators: shared, against the core (found at run time
    already loaded, by its soname), every symbol resolved at link time."""
    return ["-shared", f"-L{get_lib()}", f"-l:{CORE_LIBRARY}", "-Wl,-z,defs"]


def cuda_runtime_sources() -> list:
    """The sources every library compiles in (with get_compile_flags()): the CUDA runtime
    forwarders its kernels bind to, hidden."""
    return [os.path.join(get_include(), "tf_ops", "common", "cuda_runtime.cc")]


def cuda12_tools() -> dict:
    """ptxas and libdevice of CUDA 12 from PyPI's nvidia-cuda-nvcc-cu12 (what clang compiles
    CUDA with: TensorFlow's [and-cuda] extra installs it), {} where it is not installed."""
    for base in [*sys.path, *site.getsitepackages(), site.getusersitepackages()]:
        root = os.path.join(base, "nvidia", "cuda_nvcc")
        ptxas = os.path.join(root, "bin", "ptxas")
        if os.path.isfile(ptxas) and os.path.isdir(os.path.join(root, "nvvm", "libdevice")):
            return {"ptxas": ptxas, "nvvm": os.path.join(root, "nvvm")}
    return {}


def main() -> int:
    """python -m tf_onthefly.sysconfig: the flags, one kind per line."""
    print("include", get_include())
    print("compile_flags", " ".join(get_compile_flags()))
    print("link_flags", " ".join(get_link_flags()))
    print("cuda_runtime_sources", " ".join(cuda_runtime_sources()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
