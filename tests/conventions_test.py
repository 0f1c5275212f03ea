"""Repository conventions every generator follows, so adding one is a change in one place:
its own files (tf_ops/<name>/, python/tf_onthefly/<name>.py, tests/<name>_test.py), one line
in tf_ops/generators.bzl, and docs/ops.md regenerated (tools/docs/gen_ops_doc.py)."""

import ast
import os
import re

import goldens
import tensorflow as tf

import tf_onthefly
from tf_onthefly import _build_info

import gen_ops_doc

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
NUMBERS = "zero one two three four five six seven eight nine ten eleven twelve".split()
SNAKE = lambda op: re.sub(r"(?<!^)(?=[A-Z])", "_", op.split(">", 1)[1]).lower()  # noqa: E731


def _read(*path):
    with open(os.path.join(ROOT, *path)) as f:
        return f.read()


class ConventionsTest(tf.test.TestCase):
    def test_registry_is_the_build_list(self):
        """Every module the build lists registers a generator, and only those do."""
        self.assertEqual(sorted(tf_onthefly.REGISTRY), sorted(_build_info.GENERATOR_MODULES))

    def test_names(self):
        for name, spec in tf_onthefly.REGISTRY.items():
            with self.subTest(generator=name):
                self.assertTrue(spec.op.startswith("OnTheFly>"), spec.op)
                self.assertEqual(SNAKE(spec.op), name)
                self.assertIs(getattr(tf_onthefly, name), spec.fn)
                self.assertNotEmpty(spec.examples)

    def test_every_generator_has_a_golden_case_and_digest(self):
        """tests/goldens.py has a case for every generator (its first registry example at seed
        1, step 0) and a digest for every case: the wheel's smoke test and frameworks_test
        check the outputs against them, so a generator without one fails here first."""
        first = {}
        for case, (generator, kwargs, seed, step) in goldens.CASES.items():
            first.setdefault(generator, (case, kwargs, seed, step))
        how = "bazel run //tests:golden_digests"
        for name, spec in tf_onthefly.REGISTRY.items():
            with self.subTest(generator=name):
                self.assertIn(
                    name,
                    first,
                    f"tests/goldens.py has no case for {name}: add CASES[{name!r}] = ({name!r}, "
                    f"{spec.examples[0]!r}, 1, 0) and its digest from `{how}`",
                )
                self.assertEqual(first[name], (name, spec.examples[0], 1, 0), "its first case is its first example")
        missing = sorted(set(goldens.CASES) - set(goldens.DIGESTS))
        self.assertEqual(missing, [], f"tests/goldens.py: cases without a digest; print them with `{how}`")

    def test_files_by_role(self):
        for name in tf_onthefly.REGISTRY:
            with self.subTest(generator=name):
                for path in [
                    f"tf_ops/{name}/BUILD",
                    f"tf_ops/{name}/{name}.h",
                    f"tf_ops/{name}/{name}_op.cc",
                    f"tf_ops/{name}/{name}_kernels.cu.cc",
                    f"python/tf_onthefly/{name}.py",
                    f"tests/{name}_test.py",
                ]:
                    self.assertTrue(os.path.exists(os.path.join(ROOT, path)), f"{name} lacks {path}")

    def test_generator_files_include_no_framework(self):
        """A generator's C++ and CUDA files build into the framework-neutral core: they include
        the SDK and their own headers, never TensorFlow's (nor absl, Eigen or XLA, whose FFI
        API the SDK includes for them)."""
        for name in tf_onthefly.REGISTRY:
            for path in [f"{name}.h", f"{name}_op.cc", f"{name}_kernels.cu.cc"]:
                with self.subTest(file=path):
                    includes = re.findall(r'^#include [<"]([^>"]+)[>"]', _read("tf_ops", name, path), re.M)
                    framework = [i for i in includes if re.match(r"(tensorflow|absl|tsl|xla|Eigen|unsupported)/", i)]
                    self.assertEqual(framework, [], f"tf_ops/{name}/{path} includes a framework's header")

    def test_each_generator_test_has_reference_arguments_output_sets_and_contract(self):
        """tests/<name>_test.py: its NumPy reference, its argument space (the contract's fuzz
        draws from it), its output sets (checked on every accepted fuzz call) and a test class
        with the contract checks users run too (tf_onthefly.testing)."""
        for name in tf_onthefly.REGISTRY:
            with self.subTest(generator=name):
                tree = ast.parse(_read("tests", f"{name}_test.py"))
                functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
                assigned = {
                    t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)
                }
                bases = {ast.unparse(b) for n in tree.body if isinstance(n, ast.ClassDef) for b in n.bases}
                self.assertIn("reference", functions)
                self.assertIn("output_sets", functions)
                self.assertIn("ARGUMENTS", assigned)
                self.assertIn("testing.GeneratorContract", bases)
                # the contract class names the generator and fuzzes ARGUMENTS into output_sets
                (contract,) = [
                    n
                    for n in tree.body
                    if isinstance(n, ast.ClassDef) and "testing.GeneratorContract" in map(ast.unparse, n.bases)
                ]
                fields = {
                    t.id: ast.unparse(n.value)
                    for n in contract.body
                    if isinstance(n, ast.Assign)
                    for t in n.targets
                    if isinstance(t, ast.Name)
                }
                self.assertEqual(fields.get("generator"), repr(name))
                self.assertEqual(fields.get("fuzz_arguments"), "ARGUMENTS")
                self.assertEqual(fields.get("output_sets"), "staticmethod(output_sets)")

    def test_every_op_is_documented(self):
        """A summary, and a description for every output and every input and attribute of its own."""
        ops = gen_ops_doc.op_list()
        for name, spec in tf_onthefly.REGISTRY.items():
            with self.subTest(generator=name):
                op = ops[spec.op]
                self.assertTrue(op.summary, f"{spec.op} has no .Doc summary")
                own = gen_ops_doc.own_inputs(op) + [a for a in op.attr if a.name not in gen_ops_doc.SDK_ARGS]
                for arg in list(op.output_arg) + own:
                    self.assertTrue(arg.description, f"{spec.op}: .Doc does not describe {arg.name}")

    def test_docs_state_the_generator_count_right(self):
        """Where README.md or docs/ say how many generators there are ("six generators", "6
        built-in generators"), it is the registry's count, and a list of names that follows
        in parentheses is the registry's."""
        count = len(tf_onthefly.REGISTRY)
        stated = re.compile(
            r"\b(" + "|".join(NUMBERS) + r"|\d+)((?:\s+(?!of\b)[\w-]+){0,2}?)\s+generators\b([^.]*)", re.I
        )
        docs = ["README.md"] + [os.path.join("docs", f) for f in sorted(os.listdir(os.path.join(ROOT, "docs")))]
        for doc in [d for d in docs if d.endswith(".md")]:
            text = " ".join(_read(doc).split())
            for m in stated.finditer(text):
                number = m.group(1).lower()
                with self.subTest(doc=doc, says=m.group(0)[:80]):
                    self.assertEqual(int(number) if number.isdigit() else NUMBERS.index(number), count)
                    listed = re.match(r"[\w\s]{0,20}\(((?:`\w+`,?\s*(?:and\s+)?)+)\)", m.group(3))
                    if listed:
                        self.assertCountEqual(re.findall(r"`(\w+)`", listed.group(1)), tf_onthefly.REGISTRY)

    def test_op_reference_is_current(self):
        self.assertEqual(
            gen_ops_doc.render(),
            _read("docs", "ops.md"),
            msg="docs/ops.md is not current: run python3 tools/docs/gen_ops_doc.py (bazel run //tools/docs:write_ops_md)",
        )


if __name__ == "__main__":
    tf.test.main()
