import os
import unittest

APP = "/app"


class TestTask(unittest.TestCase):
    def test_csv(self):
        with open(os.path.join(APP, "orders.csv")) as f:
            self.assertEqual(f.read().strip().splitlines(),
                             ["id,customer,total", "3,bob,10.00", "7,ann,25.50", "12,cid,0.99"])


if __name__ == "__main__":
    unittest.main()
