import os
import unittest

APP = "/app"


import shutil
import subprocess
import tempfile


def folder(files):
    path = tempfile.mkdtemp()
    for name, content in files.items():
        with open(os.path.join(path, name), "w") as f:
            f.write(content)
    return path


def contents(path):
    result = {}
    for name in sorted(os.listdir(path)):
        with open(os.path.join(path, name)) as f:
            result[name] = f.read()
    return result


def rotate(path):
    return subprocess.run([os.path.join(APP, "rotate.sh"), path], capture_output=True, timeout=10).returncode


class TestTask(unittest.TestCase):
    def test_first_rotation(self):
        path = folder({"app.log": "a0", "db.log": "d0", "notes.txt": "n"})
        self.assertEqual(rotate(path), 0)
        self.assertEqual(contents(path), {"app.log": "", "app.log.1": "a0", "db.log": "", "db.log.1": "d0",
                                          "notes.txt": "n"})
        shutil.rmtree(path)

    def test_keeps_three(self):
        path = folder({"app.log": "a0", "app.log.1": "a1", "app.log.2": "a2", "app.log.3": "a3"})
        self.assertEqual(rotate(path), 0)
        self.assertEqual(contents(path), {"app.log": "", "app.log.1": "a0", "app.log.2": "a1", "app.log.3": "a2"})
        shutil.rmtree(path)

    def test_repeated(self):
        path = folder({"x.log": "x0"})
        for _ in range(5):
            self.assertEqual(rotate(path), 0)
        self.assertEqual(sorted(os.listdir(path)), ["x.log", "x.log.1", "x.log.2", "x.log.3"])
        shutil.rmtree(path)


if __name__ == "__main__":
    unittest.main()
