"""The tutorial's three pages show the repository's code as it is: a block marked
`<!-- file: PATH -->` is the whole file PATH, character for character; one marked
`<!-- excerpt: PATH -->` is a contiguous part of it (part 1: random_walk, part 2:
drift_walk). The text builds what the tests test. The C++ and CUDA it shows include no
TensorFlow header: a generator is framework-neutral. Part 1 stays short enough to read in
one sitting."""

import os
import re

import tensorflow as tf

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
PAGES = ["writing-a-generator.md", "bringing-a-kernel.md", "building-out-of-tree.md"]
PART1_MAX_LINES = 350


def _read(*path):
    with open(os.path.join(ROOT, *path)) as f:
        return f.read()


class TutorialTest(tf.test.TestCase):
    def test_tutorial_text_is_the_code(self):
        shown = []
        for page in PAGES:
            doc = _read("docs", page)
            for kind, path, text in re.findall(r"<!-- (file|excerpt): (\S+) -->\n```\w*\n(.*?)```", doc, re.S):
                shown.append(path)
                with self.subTest(page=page, path=path):
                    code = _read(path)
                    if kind == "file":
                        self.assertEqual(code, text, msg=f"{path} differs from the text of docs/{page}")
                    else:
                        self.assertIn(text, code, msg=f"docs/{page} shows a part of {path} that is not in it")
                    if path.endswith((".h", ".cc")):
                        self.assertNotRegex(text, r'#include [<"](tensorflow|absl)/', msg=path)
        self.assertGreaterEqual(len(shown), 10)
        self.assertIn("tf_ops/random_walk/random_walk_op.cc", shown)
        self.assertIn("tf_ops/drift_walk/drift_walk_kernels.cu.cc", shown)

    def test_pages_link_each_other_and_part_1_is_short(self):
        for page in PAGES:
            with self.subTest(page=page):
                doc = _read("docs", page)
                for other in PAGES:
                    if other != page:
                        self.assertIn(f"({other})", doc, msg=f"docs/{page} does not link {other}")
        lines = _read("docs", PAGES[0]).count("\n")
        self.assertLessEqual(lines, PART1_MAX_LINES, "part 1 of the tutorial grew: move detail to part 2 or the SDK")


if __name__ == "__main__":
    tf.test.main()
