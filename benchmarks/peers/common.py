"""What the peer scripts share: their command line, their output, and the input benchmark's
timing (tf_onthefly/bench/timing.py, standard library only), loaded from the installed
package without running the package's __init__, which imports TensorFlow: a peer's process
never imports TensorFlow (each peer runs alone, before TensorFlow takes the GPU's memory)."""

import argparse
import importlib.util
import json
import os


def _load_timing():
    package = importlib.util.find_spec("tf_onthefly")  # finds the package; runs none of it
    if package is None:
        raise ImportError("tf_onthefly is not installed (the peers time with its bench/timing.py)")
    path = os.path.join(package.submodule_search_locations[0], "bench", "timing.py")
    spec = importlib.util.spec_from_file_location("tf_onthefly_bench_timing", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


timing = _load_timing()


def arguments(description):
    """--floats N (float32 values per output), --repeats, --unroll, --smoke (toy sizes, CPU)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--floats", type=int, default=1 << 28, help="float32 values per output (default 1 GiB)")
    ap.add_argument("--repeats", type=int, default=7, help="timed calls, each of --unroll outputs (median)")
    ap.add_argument("--unroll", type=int, default=20, help="outputs generated back to back per timed call")
    ap.add_argument("--smoke", action="store_true", help="toy sizes on any device, to keep the script working")
    args = ap.parse_args()
    if args.smoke:
        args.floats, args.repeats, args.unroll = 4096, 2, 2
    return args


def seconds_per_output(generate, sync, args):
    """Median seconds per output over args.repeats calls of args.unroll generations back to
    back then one synchronisation (the library's own idiom), and its spread."""

    def call():
        out = None
        for _ in range(args.unroll):
            out = generate()
        sync(out)

    s = timing.summary(timing.call_times(call, args.repeats, warmup=1))
    return s["median"] / args.unroll, s["spread"]


def report(results):
    """One JSON line: {name: {"seconds": per output, "spread": relative}}."""
    print(json.dumps({name: dict(seconds=s, spread=spread) for name, (s, spread) in results.items()}))
