"""docs/writing-a-generator.md shows the tutorial generators' files verbatim (part 1:
random_walk, part 2: drift_walk): the text builds what the tests test. The C++ and CUDA
files it shows include no TensorFlow header: a generator is framework-neutral."""

import os
import re

import tensorflow as tf

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


class TutorialTest(tf.test.TestCase):
    def test_tutorial_text_is_the_code(self):
        with open(os.path.join(ROOT, "docs", "writing-a-generator.md")) as f:
            doc = f.read()
        blocks = re.findall(r"<!-- file: (\S+) -->\n```\w*\n(.*?)```", doc, re.S)
        self.assertGreaterEqual(len(blocks), 10)
        for path, text in blocks:
            with self.subTest(path=path):
                with open(os.path.join(ROOT, path)) as f:
                    self.assertEqual(f.read(), text, msg=f"{path} differs from the tutorial's text")
                if path.endswith((".h", ".cc")):
                    self.assertNotRegex(text, r'#include [<"](tensorflow|absl)/', msg=path)
        self.assertIn("tf_ops/random_walk/random_walk_op.cc", [path for path, _ in blocks])


if __name__ == "__main__":
    tf.test.main()
