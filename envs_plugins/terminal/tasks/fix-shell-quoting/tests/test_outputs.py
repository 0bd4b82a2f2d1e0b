import os
import unittest

APP = "/app"


import shutil
import subprocess
import tempfile

NAMES = ["plain.txt", "with space.txt", "-dash.txt", "star*.txt", "tab\there.txt"]


def backup(names, dest_name="out dir"):
    root = tempfile.mkdtemp()
    paths = []
    for name in names:
        path = os.path.join(root, "src", name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("content of " + name)
        paths.append(path)
    listing = os.path.join(root, "list.txt")
    with open(listing, "w") as f:
        f.write("\n".join(paths))  # no newline after the last path
    dest = os.path.join(root, dest_name)
    out = subprocess.run(["bash", os.path.join(APP, "backup.sh"), listing, dest], capture_output=True, text=True,
                         timeout=20)
    copied = sorted(os.listdir(dest)) if os.path.isdir(dest) else None
    contents = {}
    for name in copied or []:
        with open(os.path.join(dest, name)) as f:
            contents[name] = f.read()
    shutil.rmtree(root)
    return out.stdout.strip(), copied, contents


class TestTask(unittest.TestCase):
    def test_odd_names(self):
        stdout, copied, contents = backup(NAMES)
        self.assertEqual(copied, sorted(NAMES))
        self.assertEqual(contents["star*.txt"], "content of star*.txt")
        self.assertEqual(stdout, "copied 5")

    def test_empty_list(self):
        stdout, copied, _ = backup([])
        self.assertEqual((stdout, copied), ("copied 0", []))

    def test_glob_is_not_expanded(self):
        stdout, copied, _ = backup(["a1.txt", "a*.txt"])
        self.assertEqual((stdout, copied), ("copied 2", ["a*.txt", "a1.txt"]))


if __name__ == "__main__":
    unittest.main()
