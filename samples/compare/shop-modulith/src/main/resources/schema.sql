CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY, customer text NOT NULL, sku text NOT NULL,
  quantity int NOT NULL);
CREATE TABLE IF NOT EXISTS stock (sku text PRIMARY KEY, reserved int NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS reservations (order_id text NOT NULL);
INSERT INTO stock (sku) VALUES ('sku-1'), ('sku-2'), ('sku-3') ON CONFLICT DO NOTHING;
