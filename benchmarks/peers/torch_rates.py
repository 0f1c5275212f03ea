"""PyTorch's float32 uniform and normal generators, timed as peer_rates.py asks (one JSON line).

    python -m benchmarks.peers.torch_rates [--floats N] [--repeats 7] [--unroll 20] [--smoke]

On the GPU when PyTorch sees one, else on the CPU (only meaningful as a smoke run).
"""

import torch

from benchmarks.peers.common import arguments, report, seconds_per_output


def main():
    args = arguments(__doc__.split("\n")[0])
    device = "cuda" if torch.cuda.is_available() else "cpu"
    sync = (lambda _: torch.cuda.synchronize()) if device == "cuda" else (lambda _: None)
    results = {}
    for name, fn in (("torch.rand", torch.rand), ("torch.randn", torch.randn)):
        results[f"{name} (PyTorch {torch.__version__}, {device})"] = seconds_per_output(
            lambda fn=fn: fn(args.floats, device=device), sync, args
        )
    report(results)


if __name__ == "__main__":
    main()
