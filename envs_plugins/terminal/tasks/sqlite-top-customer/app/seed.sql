CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, amount REAL, status TEXT);
INSERT INTO customers VALUES (1, 'ann'), (2, 'bob'), (3, 'cid'), (4, 'dee');
INSERT INTO orders VALUES (1, 1, 30.0, 'paid'), (2, 2, 50.0, 'paid'), (3, 1, 25.5, 'paid'),
  (4, 3, 500.0, 'refunded'), (5, 2, 10.0, 'paid'), (6, 4, 55.0, 'paid'), (7, 3, 20.0, 'paid');
