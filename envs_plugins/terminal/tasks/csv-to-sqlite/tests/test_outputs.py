import os
import unittest

APP = "/app"


import sqlite3


def query(sql):
    db = sqlite3.connect("file:" + os.path.join(APP, "inventory.db") + "?mode=ro", uri=True)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


class TestTask(unittest.TestCase):
    def test_rows(self):
        self.assertEqual(query("SELECT sku, name, qty FROM items ORDER BY sku"),
                         [("A-1", "Widget", 12), ("B-2", "Gadget", 2), ("C-3", "Thing, large", 0),
                          ("D-4", "Doohickey", 12)])

    def test_primary_key(self):
        columns = {row[1]: row for row in query("PRAGMA table_info(items)")}
        self.assertEqual(columns["sku"][5], 1)
        self.assertEqual(columns["qty"][2].upper(), "INTEGER")

    def test_index(self):
        self.assertIn(("idx_items_name",), query("SELECT name FROM sqlite_master WHERE type = 'index'"))

    def test_view(self):
        self.assertEqual(query("SELECT sku, qty FROM in_stock ORDER BY sku"), [("A-1", 12), ("B-2", 2), ("D-4", 12)])


if __name__ == "__main__":
    unittest.main()
