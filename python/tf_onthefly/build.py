"""Builds a library of generators from a folder of one's own, against the installed package:

    python -m tf_onthefly.build FOLDER [-o lib.so] [--cuda auto|clang|nvcc|none] [--arch sm_80,...]

FOLDER holds the generators' C++ (*.cc: OTF_GENERATOR, the Config, OTF_GENERATOR_KERNELS)
and CUDA (*.cu.cc, *.cu: kernels and launchers) sources and headers; the library goes to
-o (default FOLDER/build/lib<folder name>.so) and is loaded with
tf_onthefly.load_generators(path). C++ sources are compiled with $CXX (default c++), CUDA
ones with the first CUDA compiler found (--cuda auto):

- clang (clang++, or $OTF_CLANG) with the CUDA 12 headers of TensorFlow's wheel, and ptxas
  and libdevice of PyPI's nvidia-cuda-nvcc-cu12 (TensorFlow's [and-cuda] extra installs
  them) and a fatbinary (from a CUDA toolkit, or PyPI's nvidia-cuda-nvcc): the recipe of the
  package's own kernels. Runs on every driver TensorFlow's CUDA 12 runs on.
- nvcc (on PATH, $CUDA_HOME/bin or /usr/local/cuda/bin), CUDA 12 or 13, with its own headers.
  A CUDA 13 nvcc's kernels run on the CUDA 12 runtime TensorFlow loads (the forwarders take
  the two launch entry points CUDA 13 added), with a driver for CUDA 13 (580 or newer), on
  the architectures CUDA 13 still compiles for (sm_75 on).
- none found (or --cuda none): a CPU-only library (-DOTF_CPU_ONLY, no CUDA source
  compiled), and the command says so; its generators run on the CPU, refused on a GPU.

The kernels call the CUDA runtime through the forwarders compiled into the library
(tf_onthefly.sysconfig), so they share TensorFlow's CUDA runtime and streams. Compilation
runs in parallel (-j, default the CPU count); nothing is cached.
"""

import argparse
import concurrent.futures
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

from tf_onthefly import sysconfig

# GPU architectures compiled for by default: SASS for each, PTX for the newest (what newer
# GPUs compile at load time). Volta (sm_70) only where the compiler still has it (CUDA 12).
ARCHS_CUDA12 = ("sm_70", "sm_80", "sm_90")
ARCHS_CUDA13 = ("sm_75", "sm_80", "sm_90")


class BuildError(Exception):
    pass


def _which(*names):
    for name in names:
        if name and (os.path.isfile(name) and os.access(name, os.X_OK) or shutil.which(name)):
            return shutil.which(name) or name
    return None


def find_nvcc():
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    return _which("nvcc", home and os.path.join(home, "bin", "nvcc"), "/usr/local/cuda/bin/nvcc")


def nvcc_include_dirs(nvcc):
    """The CUDA headers nvcc itself compiles with (its dry run's INCLUDES and SYSTEM_INCLUDES:
    right also where `nvcc` on PATH is a wrapper script outside the toolkit)."""
    out = subprocess.run(
        [nvcc, "--dryrun", "-x", "cu", "-c", os.devnull, "-o", os.devnull], capture_output=True, text=True
    ).stderr
    dirs = []
    for line in out.splitlines():
        if re.match(r"#\$ (SYSTEM_)?INCLUDES=", line):
            dirs += re.findall(r'(?:-I|-isystem"? ")"?([^" ]+)', line)
    return [os.path.normpath(d) for d in dirs if os.path.isdir(d)]


def nvcc_version(nvcc):
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    found = re.search(r"release (\d+)\.(\d+)", out)
    if not found:
        raise BuildError(f"{nvcc} --version says no release:\n{out}")
    return int(found.group(1)), int(found.group(2))


def find_clang():
    versions = [f"clang++-{v}" for v in range(22, 14, -1)]
    return _which(os.environ.get("OTF_CLANG"), "clang++", *versions)


def find_fatbinary(nvcc):
    """A fatbinary (clang's CUDA driver packs the GPU code with it): beside nvcc, or PyPI's."""
    candidates = [nvcc and os.path.join(os.path.dirname(os.path.realpath(nvcc)), "fatbinary")]
    for base in sys.path:
        candidates += glob.glob(os.path.join(base, "nvidia", "cu1*", "bin", "fatbinary"))
        candidates.append(os.path.join(base, "nvidia", "cuda_nvcc", "bin", "fatbinary"))
    return next((c for c in candidates if c and os.path.isfile(c)), None)


# clang-16 calls fatbinary with --image=profile=sm_NN,file=F, which fatbinary 13 no longer
# takes: the wrapper rewrites it to --image3=kind=elf|ptx,sm=NN,file=F (fatbinary 12 takes both).
FATBINARY_WRAPPER = """#!/bin/sh
for a in "$@"; do
  case "$a" in
    --image=profile=sm_*,file=*) p=${a#--image=profile=sm_}; a="--image3=kind=elf,sm=${p%%,file=*},file=${a#*,file=}" ;;
    --image=profile=compute_*,file=*) p=${a#--image=profile=compute_}; a="--image3=kind=ptx,sm=${p%%,file=*},file=${a#*,file=}" ;;
  esac
  set -- "$@" "$a"; shift
done
exec "%s" "$@"
"""


def clang_cuda_root(work, fatbinary):
    """A CUDA folder clang takes as --cuda-path: TensorFlow's CUDA 12 headers, PyPI's ptxas and
    libdevice, the fatbinary wrapper."""
    tools = sysconfig.cuda12_tools()
    include = sysconfig.cuda_include_dirs()
    root = os.path.join(work, "cuda")
    os.makedirs(os.path.join(root, "bin"))
    os.symlink(include[0], os.path.join(root, "include"))
    os.symlink(tools["nvvm"], os.path.join(root, "nvvm"))
    os.symlink(tools["ptxas"], os.path.join(root, "bin", "ptxas"))
    wrapper = os.path.join(root, "bin", "fatbinary")
    with open(wrapper, "w") as f:
        f.write(FATBINARY_WRAPPER % fatbinary)
    os.chmod(wrapper, 0o755)
    return root


def choose_cuda(choice):
    """(kind, compiler, fatbinary, why) for --cuda `choice`; kind None: CPU-only, `why` says why."""
    nvcc = find_nvcc()
    clang = find_clang()
    fatbinary = find_fatbinary(nvcc)
    clang_ready = clang and sysconfig.cuda12_tools() and sysconfig.cuda_include_dirs() and fatbinary
    if choice in ("auto", "clang") and clang_ready:
        return "clang", clang, fatbinary, ""
    if choice in ("auto", "nvcc") and nvcc:
        return "nvcc", nvcc, None, ""
    missing = []
    if choice in ("auto", "clang"):
        missing.append(
            "clang with CUDA 12's ptxas and libdevice (pip install nvidia-cuda-nvcc-cu12) and a fatbinary"
            if clang
            else "no clang++"
        )
    if choice in ("auto", "nvcc"):
        missing.append("no nvcc (on PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)")
    if choice != "auto" and choice != "none":
        raise BuildError(f"--cuda {choice}: not usable here: {'; '.join(missing)}")
    return None, None, None, "--cuda none" if choice == "none" else "; ".join(missing)


def cuda_command(kind, compiler, archs, cuda_root):
    common = [f"-I{sysconfig.get_include()}", *sysconfig.COMMON_FLAGS]
    if kind == "clang":
        return [
            compiler,
            "-x",
            "cuda",
            f"--cuda-path={cuda_root}",
            *[f"-isystem{d}" for d in sysconfig.cuda_include_dirs()[1:]],
            "-Xclang",
            "-fcuda-allow-variadic-functions",
            "-DCCCL_IGNORE_DEPRECATED_API",
            "-ffp-contract=off",
            "-Wno-unknown-cuda-version",
            "-include",
            os.path.join(sysconfig.get_include(), "third_party", "cuda", "clang_cuda_prelude.h"),
            *[f"--cuda-gpu-arch={a}" for a in archs],
            *[f"--no-cuda-include-ptx={a}" for a in archs[:-1]],
            *common,
        ]
    gencode = [f"-gencode=arch=compute_{a[3:]},code={a}" for a in archs]
    gencode.append(f"-gencode=arch=compute_{archs[-1][3:]},code=compute_{archs[-1][3:]}")
    host = [f for f in common if not f.startswith("-f")]
    return [
        compiler,
        "-x",
        "cu",
        "-fmad=false",
        "-Xcompiler=-fPIC,-fvisibility=hidden,-ffp-contract=off",
        "-Wno-deprecated-gpu-targets",
        *gencode,
        *host,
    ]


def build(folder, output=None, cuda="auto", archs=None, jobs=None, verbose=False):
    folder = os.path.abspath(folder)
    if not os.path.isdir(folder):
        raise BuildError(f"{folder}: no such folder")
    name = os.path.basename(folder.rstrip(os.sep)).replace("-", "_")
    output = os.path.abspath(output or os.path.join(folder, "build", f"lib{name}.so"))
    cc = sorted(f for f in glob.glob(os.path.join(folder, "*.cc")) if not f.endswith(".cu.cc"))
    cu = sorted(glob.glob(os.path.join(folder, "*.cu.cc")) + glob.glob(os.path.join(folder, "*.cu")))
    if not cc:
        raise BuildError(f"{folder}: no C++ source (*.cc) with OTF_GENERATOR lines")
    kind, compiler, fatbinary, why = choose_cuda(cuda) if cu else (None, None, None, "no CUDA source")
    cxx = os.environ.get("CXX", "c++")
    host_flags = [f"-I{folder}", *sysconfig.get_compile_flags()]
    if not sysconfig.cuda_include_dirs():  # a TensorFlow without CUDA headers: nvcc's own
        nvcc = find_nvcc()
        if nvcc is None:
            raise BuildError(
                "no CUDA headers: neither TensorFlow's (tensorflow/include/third_party/gpus/cuda) nor nvcc's"
            )
        dirs = nvcc_include_dirs(nvcc)
        if not dirs:
            raise BuildError(f"no CUDA headers: TensorFlow has none, and {nvcc} --dryrun names no include folder")
        host_flags += [f"-isystem{d}" for d in dirs]
    with tempfile.TemporaryDirectory(prefix="otf_build_") as work:
        commands = []
        if kind is None:
            print(f"tf_onthefly.build: CPU-only library ({why}): its generators run on the CPU only", flush=True)
            host_flags.append("-DOTF_CPU_ONLY")
        else:
            version = nvcc_version(compiler) if kind == "nvcc" else (12, 5)
            if version[0] < 12:
                raise BuildError(f"{compiler} is CUDA {version[0]}.{version[1]}: the kernels need CUDA 12 or newer")
            archs = tuple(archs or (ARCHS_CUDA13 if version[0] >= 13 else ARCHS_CUDA12))
            root = clang_cuda_root(work, fatbinary) if kind == "clang" else None
            base = cuda_command(kind, compiler, archs, root) + [f"-I{folder}"]
            print(
                f"tf_onthefly.build: CUDA sources with {kind} ({compiler}, CUDA {version[0]}.{version[1]}) for "
                f"{', '.join(archs)}",
                flush=True,
            )
            commands += [base + ["-c", s, "-o", os.path.join(work, f"cu{i}.o")] for i, s in enumerate(cu)]
        sources = cc + sysconfig.cuda_runtime_sources()
        commands += [
            [cxx, "-x", "c++", *host_flags, "-c", s, "-o", os.path.join(work, f"cc{i}.o")]
            for i, s in enumerate(sources)
        ]
        with concurrent.futures.ThreadPoolExecutor(jobs or os.cpu_count() or 1) as pool:
            for command, result in zip(commands, pool.map(_run(verbose), commands)):
                if result.returncode != 0:
                    raise BuildError(f"failed: {' '.join(command)}\n{result.stdout}{result.stderr}")
        os.makedirs(os.path.dirname(output), exist_ok=True)
        objects = sorted(glob.glob(os.path.join(work, "*.o")))
        link = [cxx, *objects, "-o", output, *sysconfig.get_link_flags()]
        result = _run(verbose)(link)
        if result.returncode != 0:
            raise BuildError(f"failed: {' '.join(link)}\n{result.stdout}{result.stderr}")
    print(f"tf_onthefly.build: {output}", flush=True)
    return output


def _run(verbose):
    def run(command):
        if verbose:
            print(" ".join(command), flush=True)
        return subprocess.run(command, capture_output=True, text=True)

    return run


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tf_onthefly.build", description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default=".")
    parser.add_argument("-o", "--output", help="the library (default FOLDER/build/lib<folder name>.so)")
    parser.add_argument("--cuda", choices=("auto", "clang", "nvcc", "none"), default="auto")
    parser.add_argument("--arch", help="GPU architectures, comma-separated (sm_80,sm_90); the last also as PTX")
    parser.add_argument("-j", "--jobs", type=int)
    parser.add_argument("-v", "--verbose", action="store_true", help="print every command")
    args = parser.parse_args(argv)
    try:
        build(args.folder, args.output, args.cuda, args.arch and args.arch.split(","), args.jobs, args.verbose)
    except BuildError as e:
        print(f"tf_onthefly.build: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
