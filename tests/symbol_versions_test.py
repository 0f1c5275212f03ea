"""Every shared library the wheel ships (and a generator library built with the SDK, as a
user's is) satisfies the manylinux policy the wheel is tagged with, by the same rule
auditwheel applies: each versioned symbol a library needs from the C and C++ runtimes
(GLIBC_*, GLIBCXX_*, CXXABI_*, GCC_*, ...) is one the policy allows. A reference such as
dlopen@GLIBC_2.34 (NVTX's, pulled in by CUB's device-wide algorithms unless
CCCL_DISABLE_NVTX) fails here, under `bazel test`, instead of only when build_pip_pkg.sh
runs auditwheel.

    symbol_versions_test.py BUILD_PIP_PKG_SH LIBRARY...

The policy is auditwheel's own file (auditwheel/policy/manylinux-policy.json) and its name
the wheel's platform tag in build_pip_pkg.sh (PLAT), so neither is restated here.
"""

import json
import os
import re
import subprocess
import sys
import unittest

import auditwheel

ARGS = sys.argv[1:]
sys.argv[1:] = []


def platform_tag(build_script):
    """The manylinux policy name build_pip_pkg.sh tags the wheel with (manylinux_2_24)."""
    match = re.search(r"OTF_WHEEL_PLAT:-(manylinux_\w+?)_x86_64\}", open(build_script).read())
    if not match:
        raise AssertionError(f"{build_script}: no PLAT=${{OTF_WHEEL_PLAT:-manylinux_..._x86_64}} line")
    return match.group(1)


def policy(name):
    """{prefix: allowed versions} of auditwheel's policy `name` for x86_64."""
    path = os.path.join(os.path.dirname(auditwheel.__file__), "policy", "manylinux-policy.json")
    for p in json.load(open(path)):
        if p["name"] == name or name in p.get("aliases", []):
            return {k: set(v) for k, v in p["symbol_versions"]["x86_64"].items()}
    raise AssertionError(f"auditwheel has no policy {name}")


def versioned_references(library):
    """(symbol, version prefix, version) for each undefined versioned symbol: dlopen@GLIBC_2.34
    -> ("dlopen", "GLIBC", "2.34")."""
    out = subprocess.run(["nm", "-D", "--undefined-only", library], check=True, capture_output=True, text=True)
    refs = []
    for line in out.stdout.splitlines():
        match = re.search(r"(\S+?)@+([A-Z]+)_([\w.]+)$", line.strip())
        if match:
            refs.append(match.groups())
    return refs


class SymbolVersionsTest(unittest.TestCase):
    def test_libraries_satisfy_the_wheels_manylinux_policy(self):
        build_script, libraries = ARGS[0], ARGS[1:]
        self.assertTrue(libraries)
        name = platform_tag(build_script)
        allowed = policy(name)
        for library in libraries:
            with self.subTest(library=os.path.basename(library)):
                refs = versioned_references(library)
                self.assertTrue(refs, f"{library}: no versioned symbol found (nm -D)")
                too_new = sorted(
                    f"{sym}@{prefix}_{version}"
                    for sym, prefix, version in refs
                    if prefix in allowed and version not in allowed[prefix]
                )
                self.assertEqual(
                    too_new,
                    [],
                    f"{os.path.basename(library)} needs symbol versions that {name} does not allow "
                    "(auditwheel would refuse the tag): bind them to older versions or avoid them "
                    "(docs/packaging.md, Policy)",
                )


if __name__ == "__main__":
    unittest.main()
