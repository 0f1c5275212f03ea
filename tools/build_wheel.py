"""Writes the tf-onthefly wheel from the built package files (used by build_pip_pkg.sh).

    build_wheel.py --out DIR [--platform linux_x86_64] FILE...

A wheel is a zip with the package, a METADATA, a WHEEL and a RECORD file; writing it
directly keeps the build offline and reproducible (fixed timestamps, sorted entries).
FILE are the package's modules, _build_info.py, _variants.py (the TensorFlow versions it has
op libraries for) and the libraries; they all go into tf_onthefly/. The TensorFlow
requirement is the range of _variants.py's versions.
"""

import argparse
import base64
import hashlib
import os
import runpy
import zipfile

NAME, DIST = "tf-onthefly", "tf_onthefly"
EPOCH = (2026, 1, 1, 0, 0, 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--platform", default="linux_x86_64")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()

    version_py = [f for f in args.files if os.path.basename(f) == "_version.py"][0]
    version = runpy.run_path(version_py)["__version__"]
    variants_py = [f for f in args.files if os.path.basename(f) == "_variants.py"][0]
    minors = sorted(runpy.run_path(variants_py)["VARIANTS"], key=lambda v: tuple(map(int, v.split("."))))
    newest_major, newest_minor = minors[-1].split(".")
    tf_requirement = f"tensorflow>={minors[0]},<{newest_major}.{int(newest_minor) + 1}"
    tag = f"py3-none-{args.platform}"
    info = f"{DIST}-{version}.dist-info"
    entries = {}
    for f in sorted(args.files):
        with open(f, "rb") as fh:
            entries[f"{DIST}/{os.path.basename(f)}"] = fh.read()
    entries[f"{info}/METADATA"] = "\n".join(
        [
            "Metadata-Version: 2.1",
            f"Name: {NAME}",
            f"Version: {version}",
            "Summary: TensorFlow custom ops that generate training data on the fly, on CPU or GPU.",
            "Requires-Python: >=3.10",
            f"Requires-Dist: {tf_requirement}",
            "Requires-Dist: numpy",
            "Requires-Dist: absl-py",
            "License: Apache-2.0",
            "",
        ]
    ).encode()
    entries[f"{info}/WHEEL"] = "\n".join(
        [
            "Wheel-Version: 1.0",
            "Generator: tf_onthefly tools/build_wheel.py",
            "Root-Is-Purelib: false",
            f"Tag: {tag}",
            "",
        ]
    ).encode()
    entries[f"{info}/top_level.txt"] = f"{DIST}\n".encode()
    record = []
    for name, data in entries.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    entries[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"{DIST}-{version}-{tag}.whl")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries.items():
            zi = zipfile.ZipInfo(name, EPOCH)
            zi.external_attr = (0o755 if name.endswith(".so") else 0o644) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    print(path)


if __name__ == "__main__":
    main()
