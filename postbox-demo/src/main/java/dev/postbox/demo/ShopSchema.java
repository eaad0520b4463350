package dev.postbox.demo;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.Statement;

/**
 * The shop's own tables (customers, products, orders, the inventory's audit of its effects and
 * suppressed duplicates, the warehouse outage switch) and their first rows.
 */
final class ShopSchema {

  static final int PRODUCTS = 50;
  static final long INITIAL_STOCK = 10_000;
  static final int WHOLESALE_CUSTOMERS = 3;

  private ShopSchema() {}

  /**
   * Creates the tables in {@code ds}'s schema, with the products and {@code customers} customers.
   */
  static void create(HikariDataSource ds, int customers) throws Exception {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE customers (id text PRIMARY KEY, orders bigint NOT NULL DEFAULT 0)");
      s.execute(
          "CREATE TABLE products (sku text PRIMARY KEY, initial_stock bigint NOT NULL,"
              + " stock bigint NOT NULL)");
      s.execute(
          "CREATE TABLE orders (id uuid PRIMARY KEY, customer_id text NOT NULL REFERENCES customers,"
              + " seq bigint NOT NULL, amount_cents bigint NOT NULL,"
              // no foreign key to products: the orders service sells a product (NEW_SKU) before the
              // inventory knows it; those orders are dead-lettered until the "fix" adds it
              + " sku text NOT NULL, quantity int NOT NULL,"
              + " created_at timestamptz NOT NULL DEFAULT now())");
      // The inventory's audit of its effects: deliberately no unique constraint, so that a second
      // effect of one message would be a second row (counted as a duplicate effect).
      s.execute(
          "CREATE TABLE inventory_effects (id bigserial, message_id uuid NOT NULL, order_id uuid NOT NULL,"
              + " sku text NOT NULL, quantity int NOT NULL, incarnation int NOT NULL,"
              + " applied_at timestamptz NOT NULL DEFAULT now())");
      // One row per delivery the inventory's inbox suppressed as a duplicate.
      s.execute(
          "CREATE TABLE inventory_suppressed (message_id uuid NOT NULL, incarnation int NOT NULL,"
              + " suppressed_at timestamptz NOT NULL DEFAULT now())");
      s.execute(
          "INSERT INTO products (sku, initial_stock, stock) SELECT 'sku-' || lpad(g::text, 3, '0'), "
              + INITIAL_STOCK
              + ", "
              + INITIAL_STOCK
              + " FROM generate_series(1, "
              + PRODUCTS
              + ") g");
      s.execute(
          "INSERT INTO customers (id) SELECT 'customer-' || g FROM generate_series(1, "
              + customers
              + ") g");
      // dedicated keys: the wholesale customers (their orders need the warehouse) and the
      // customers who order the product the inventory does not know yet
      s.execute(
          "INSERT INTO customers (id) SELECT '"
              + InventoryProcess.WHOLESALE
              + "' || g FROM generate_series(1, "
              + WHOLESALE_CUSTOMERS
              + ") g");
      s.execute(
          "INSERT INTO customers (id) SELECT 'newsku-' || g FROM generate_series(1, "
              + PoisonAndReplay.UNKNOWN_PRODUCT
              + ") g");
      // the simulated warehouse is down while a row here says so (InventoryProcess)
      s.execute("CREATE TABLE warehouse_outage (until timestamptz NOT NULL)");
    }
  }
}
