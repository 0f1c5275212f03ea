"""The repository's own rules (as tensorflow/addons' source_code_test.py): every file sits
where the layout says (the package holds what users run, measurement is the benchmarks
package, tools/ is sorted by role), and no file speaks of the place the project was built
in rather than of the product.

    bazel test //tools/testing:source_code_test      # or: python3 tools/testing/source_code_test.py

It reads the working tree (tracked files and new ones git does not ignore), found from this
file's real location, so Bazel runs it unconditionally (tag "external").
"""

import os
import re
import subprocess
import unittest

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SELF = "tools/testing/source_code_test.py"

# What may sit at the top of the repository.
TOP_LEVEL = {
    ".bazelignore",
    ".bazelrc",
    ".bazelversion",
    ".ci",
    ".clang-format",
    ".gitignore",
    "BUILD",
    "CHANGELOG.md",
    "LICENSE",
    "MANIFEST.in",
    "README.md",
    "WORKSPACE",
    "benchmarks",  # the measurements (one Python package), their runner, results/
    "build_pip_pkg.sh",
    "configure.sh",
    "docs",
    "examples",  # what a user's own repository looks like, built against the installed wheel
    "pyproject.toml",
    "python",  # the package
    "requirements.txt",
    "ruff.toml",
    "setup.py",
    "tests",
    "tf_ops",  # the ops, the SDK
    "third_party",
    "tools",
}
# tools/ holds build and maintenance only, sorted by role; measurement code is benchmarks/.
TOOLS_ROLES = {"build", "docs", "format", "testing"}
# docs/ holds pages (and their images); results of runs live in benchmarks/results/.
DOCS = re.compile(r"^docs/([\w.-]+\.md|BUILD|img/[\w.-]+\.(png|svg))$")
# Modules import by package, never by editing the search path.
SYS_PATH_EDIT = re.compile(r"\bsys\.path\.(insert|append|extend)\(|\bsys\.path\s*\+?=[^=]")
# The package's core (everything but bench/, the input benchmark, and the command line that
# runs it) imports nothing of the benchmark: measurement stays out of what a training imports.
BENCH_IMPORT = re.compile(
    r"^\s*(from tf_onthefly\.bench\b|from tf_onthefly import [^#\n]*\bbench\b|import tf_onthefly\.bench\b)", re.M
)
PACKAGE_CORE = re.compile(r"^python/tf_onthefly/(?!__main__\.py$)[\w]+\.py$")

# Words that belong to a project's history or one machine, not to the product. Each: (what, regex).
ENVIRONMENT_WORDS = [
    # One machine's card, cores and tools, and names that read as something else.
    ("one card as if the only one ('an NVIDIA H200' names it)", re.compile(r"\bthe (NVIDIA )?H[12]00\b")),
    (
        "the build machine's cores",
        re.compile(r"\b(two|2)[ -](busy |idle |shared )?(CPU )?cores?\b|\btwo (busy|idle) ones\b"),
    ),
    ("the build machine ('Debian or Ubuntu, as root')", re.compile(r"\bfresh Debian machine\b")),
    ("a tool that is gone", re.compile(r"\b(gpu_session|stage_device)\.sh\b")),
    (
        "'seed model' (reads as the seed argument: the small MLP, small_mlp)",
        re.compile(r"\bseed (model|config)\b", re.I),
    ),
    ("a date (history lives in git and CHANGELOG.md)", re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")),
    ("a time of day", re.compile(r"\b[0-2]\d:[0-5]\d(-[0-2]\d:[0-5]\d)? UTC\b")),
]
# Where dates belong: the changelog, the raw results of runs (named by date and card), the
# test data kept from such runs and the page of measured numbers, whose every table names the
# date of its run.
DATES_ALLOWED = re.compile(r"^(CHANGELOG\.md|docs/performance\.md|benchmarks/results/.*|tests/testdata/.*)$")
# Where the machine of a run is named: the results and the page whose tables name theirs.
MACHINES_ALLOWED = re.compile(r"^(docs/performance\.md|benchmarks/results/.*)$")
TEXT = re.compile(r"\.(py|sh|md|h|cc|cu|bzl|txt|toml|json|cfg|ini|yml|yaml|in)$|(^|/)(BUILD|WORKSPACE|run|\.[\w-]+)$")


def repository_files():
    """The working tree's files: tracked, and new ones git does not ignore."""
    out = subprocess.run(
        ["git", "-C", ROOT, "ls-files", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    return sorted(f for f in out if f and os.path.isfile(os.path.join(ROOT, f)))


def layout_problem(path):
    """Why `path` is outside the layout, or None."""
    parts = path.split("/")
    if parts[0] not in TOP_LEVEL:
        return f"'{parts[0]}' is not a top-level entry of the layout (README.md's table)"
    if parts[0] == "tools":
        if len(parts) < 3 or parts[1] not in TOOLS_ROLES:
            return f"tools/ holds only {sorted(TOOLS_ROLES)}/ (build and maintenance by role)"
    if parts[0] == "docs" and not DOCS.match(path):
        return "docs/ holds pages (*.md) and their images; results of runs go to benchmarks/results/"
    return None


def word_problems(path, text):
    """[(line number, what, the line)] of environment words in a file's text."""
    found = []
    for n, line in enumerate(text.split("\n"), 1):
        for what, regex in ENVIRONMENT_WORDS:
            if what.startswith(("a date", "a time")) and DATES_ALLOWED.match(path):
                continue
            if what.startswith(("one card", "the build machine's")) and MACHINES_ALLOWED.match(path):
                continue
            if regex.search(line):
                found.append((n, what, line.strip()[:120]))
    return found


# What a page names must exist (docs that name what is gone mislead): a repository path
# (`tf_ops/sdk/gpu_launch.h`), a result file (`2026-12-03_h200_rates.txt`, in
# benchmarks/results/), a function of a file (`StreamKey` (`tf_ops/sdk/generator.h`)) and
# another page's section (docs/training.md, "Many steps per call"). Pages: every *.md but
# the changelog, which names what was removed.
TOP_DIRS = r"tf_ops|python|tests|benchmarks|examples|tools|docs|third_party|\.ci"
REPO_PATH = re.compile(rf"(?<![\w/.$~@-])((?:{TOP_DIRS})/[\w./+-]*\w)(\.\{{[\w,]+\}})?")
RESULT_FILE = re.compile(r"\b(20\d\d-[01]\d-[0-3]\d_[\w-]+)\.(\{[\w,]+\}|\w+)")
SYMBOL_IN_FILE = re.compile(rf"`(\w+)(?:\(\))?` \(`((?:{TOP_DIRS})/[\w./-]+)`\)")
SECTION = re.compile(r"\b(docs/[\w-]+\.md),? \(?\"([^\"]+)\"")
# Paths the build writes (bazel-bin/...), named as the places they take.
BUILT = {"python/tf_onthefly/_variants.py", "python/tf_onthefly/_build_info.py"}


def has_section(page, section):
    """Whether `section` names a heading of the page (all of it, or the part before or after
    its colon, or before a bracket: "The layers" for "The layers: what each library holds",
    "XLA" for "XLA (`jit_compile`)") or a term it defines in bold."""
    for line in page.split("\n"):
        heading = line.lstrip("#").strip() if line.startswith("#") else ""
        if heading and (
            heading == section
            or heading.startswith((section + ":", section + " ("))
            or heading.endswith(": " + section)
        ):
            return True
    return f"**{section}**" in page


def page_problems(text, exists, read):
    """[what] a page names that is not there. exists(path) and read(path) see the tree."""
    found = []
    for path, alternatives in REPO_PATH.findall(text):
        for p in [f"{path}.{e}" for e in alternatives.strip(".{}").split(",")] if alternatives else [path]:
            if p not in BUILT and not exists(p):
                found.append(f"names {p}, which does not exist")
    for stem, ext in RESULT_FILE.findall(text):
        for e in ext.strip("{}").split(","):
            if not exists(f"benchmarks/results/{stem}.{e}"):
                found.append(f"names the result {stem}.{e}, which benchmarks/results/ does not hold")
    for symbol, path in SYMBOL_IN_FILE.findall(text):
        if exists(path) and not re.search(rf"\b{symbol}\b", read(path)):
            found.append(f"says {path} has {symbol}; it does not")
    flat = " ".join(text.split())
    for page, section in SECTION.findall(flat):
        if exists(page) and not has_section(read(page), section):
            found.append(f'names the section "{section}" of {page}, which has no such heading')
    return found


def python_problems(path, text):
    """[what] is wrong with a Python file's imports."""
    found = []
    if SYS_PATH_EDIT.search(text):
        found.append("edits sys.path (import by package: benchmarks/ is one, tests/ are Bazel's)")
    if PACKAGE_CORE.match(path) and BENCH_IMPORT.search(text):
        found.append("the package's core imports tf_onthefly.bench (measurement)")
    return found


class SourceCodeTest(unittest.TestCase):
    def setUp(self):
        self.files = repository_files()
        self.assertGreater(len(self.files), 50, f"no repository found at {ROOT}")

    def test_every_file_is_in_the_layout(self):
        problems = [f"{f}: {why}" for f in self.files if (why := layout_problem(f))]
        self.assertEqual(problems, [], "\n" + "\n".join(problems))

    def test_no_words_of_the_build_environment(self):
        problems = []
        for f in self.files:
            if f == SELF or f.startswith("third_party/") or not TEXT.search(f):
                continue
            with open(os.path.join(ROOT, f), encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            problems += [f"{f}:{n}: {what}: {line}" for n, what, line in word_problems(f, text)]
        self.assertEqual(problems, [], "\n" + "\n".join(problems))

    def test_imports_by_package(self):
        problems = []
        for f in self.files:
            if f.endswith(".py") and f != SELF and not f.startswith("third_party/"):
                with open(os.path.join(ROOT, f), encoding="utf-8") as fh:
                    problems += [f"{f}: {what}" for what in python_problems(f, fh.read())]
        self.assertEqual(problems, [], "\n" + "\n".join(problems))

    def test_benchmarks_is_one_package(self):
        folders = {os.path.dirname(f) for f in self.files if f.startswith("benchmarks/") and f.endswith(".py")}
        missing = sorted(d for d in folders if f"{d}/__init__.py" not in self.files)
        self.assertEqual(missing, [], "folders of benchmarks/ modules without __init__.py")

    def test_pages_name_what_exists(self):
        def exists(path):
            return os.path.exists(os.path.join(ROOT, path))

        def read(path):
            with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as fh:
                return fh.read()

        problems = []
        for f in self.files:
            if f.endswith(".md") and f != "CHANGELOG.md" and not f.startswith("third_party/"):
                problems += [f"{f}: {what}" for what in page_problems(read(f), exists, read)]
        self.assertEqual(problems, [], "\n" + "\n".join(problems))

    def test_every_result_is_described(self):
        results = [f for f in self.files if f.startswith("benchmarks/results/") and not f.endswith("README.md")]
        with open(os.path.join(ROOT, "benchmarks/results/README.md"), encoding="utf-8") as fh:
            readme = fh.read()
        named = set()
        for stem, ext in RESULT_FILE.findall(readme):
            named |= {f"benchmarks/results/{stem}.{e}" for e in ext.strip("{}").split(",")}
        self.assertEqual(sorted(set(results) - named), [], "results not in benchmarks/results/README.md")

    def test_every_measurement_is_described_once(self):
        """benchmarks/README.md's table has one row per measurement module (its helpers, the
        runner and the CI smoke test are named in its text, not in the table)."""
        with open(os.path.join(ROOT, "benchmarks/README.md"), encoding="utf-8") as fh:
            rows = re.findall(r"^\| `([^`]+?)/?` \|", fh.read(), re.M)
        # A module is a .py file or a folder with a BUILD of its own (kernel_bench/).
        modules = {m.group(1) for f in self.files if (m := re.fullmatch(r"benchmarks/(\w+)(?:\.py|/BUILD)", f))}
        modules -= {"__init__", "loops", "run", "smoke_test"}
        twice = sorted({r for r in rows if rows.count(r) > 1})
        self.assertEqual((sorted(modules - set(rows)), twice), ([], []), "benchmarks/README.md: (missing, twice)")

    def test_performance_page_is_short(self):
        """docs/performance.md holds current numbers only, one table per measurement."""
        with open(os.path.join(ROOT, "docs/performance.md"), encoding="utf-8") as fh:
            lines = fh.read().count("\n")
        self.assertLessEqual(lines, 150, "docs/performance.md: current numbers only (history is in git)")

    def test_counter_contract_says_where_keys_are_derived(self):
        """docs/counter-contract.md: the GPU kernel derives the stream keys on the device (its
        first threads call StreamKey), not the host before the launch."""
        with open(os.path.join(ROOT, "docs/counter-contract.md"), encoding="utf-8") as fh:
            contract = " ".join(fh.read().split())
        self.assertIn("the GPU kernel derives them on the device", contract)
        with open(os.path.join(ROOT, "tf_ops/sdk/generator_gpu.cu.h"), encoding="utf-8") as fh:
            kernel = re.search(r"__global__ void GeneratorKernel\(.*?\n}\n", fh.read(), re.S)
        self.assertIsNotNone(kernel, "GeneratorKernel not found in tf_ops/sdk/generator_gpu.cu.h")
        self.assertIn("StreamKey(", kernel.group(0))

    def test_the_rules_catch_what_they_name(self):
        self.assertTrue(word_problems("docs/x.md", "run of 2026-12-03"))
        self.assertFalse(word_problems("docs/x.md", "tf.compat.v1.Session and test_session"))
        self.assertFalse(word_problems("docs/x.md", "benchmarks/results/2026-12-03_h200_rates.txt"))
        self.assertFalse(word_problems("CHANGELOG.md", "## 0.2.0 (2026-12-03)"))
        self.assertTrue(word_problems("docs/x.md", "measured on the H200"))
        self.assertFalse(word_problems("docs/x.md", "measured on an NVIDIA H200"))
        self.assertFalse(word_problems("benchmarks/results/README.md", "the H200 run"))
        self.assertTrue(word_problems("README.md", "3 minutes on two busy cores"))
        self.assertTrue(word_problems("README.md", "## The two commands (fresh Debian machine, as root)"))
        self.assertTrue(word_problems("CHANGELOG.md", "replaced tools/gpu_session.sh"))
        self.assertTrue(word_problems("docs/bench.md", "the seed model trains"))
        self.assertTrue(layout_problem("tools/op_cost.py"))
        self.assertTrue(layout_problem("scratch/notes.txt"))
        self.assertIsNone(layout_problem("tools/build/tf_release.sh"))
        self.assertIsNone(layout_problem("tools/testing/test_all_tf.sh"))
        tree = {"tf_ops/sdk/gpu_launch.h": "void LaunchKernel();", "docs/a.md": "# T\n## Many steps\n"}
        exists, read = tree.__contains__, tree.__getitem__
        self.assertFalse(
            page_problems("`tf_ops/sdk/gpu_launch.h`, `LaunchKernel` (`tf_ops/sdk/gpu_launch.h`)", exists, read)
        )
        self.assertTrue(page_problems("`tf_ops/common/gpu_launch.h`", exists, read))
        self.assertTrue(page_problems("`Launch` (`tf_ops/sdk/gpu_launch.h`)", exists, read))
        self.assertTrue(page_problems("`2026-12-03_h200_x.txt`", exists, read))
        self.assertFalse(page_problems('(docs/a.md, "Many\nsteps")', exists, read))
        self.assertTrue(page_problems("`tf_ops/sdk/gpu_launch.{h,cc}`", exists, read))
        self.assertTrue(page_problems('docs/a.md, "Few steps"', exists, read))
        self.assertFalse(page_problems("bazel-bin/tf_ops/x.so and //tf_ops/x:y", exists, read))
        self.assertTrue(python_problems("benchmarks/x.py", "sys.path.insert(0, HERE)\n"))
        self.assertTrue(python_problems("python/tf_onthefly/data.py", "from tf_onthefly.bench import timing\n"))
        self.assertTrue(python_problems("python/tf_onthefly/data.py", "from tf_onthefly import _load, bench\n"))
        self.assertFalse(
            python_problems("python/tf_onthefly/bench/_cli.py", "from tf_onthefly.bench import _measure\n")
        )
        self.assertFalse(python_problems("tests/x.py", "env = dict(PYTHONPATH=os.pathsep.join(sys.path))\n"))


if __name__ == "__main__":
    unittest.main()
