package dev.postbox.demo;

import dev.postbox.core.codec.EventTypes;
import java.util.UUID;

/** The shop's events and their registry, shared by the orders and the inventory service. */
public final class ShopEvents {

  /** Type of {@link OrderCreated}. */
  public static final String ORDER_CREATED = "order.created";

  /** Type of {@link StockUpdated}. */
  public static final String STOCK_UPDATED = "stock.updated";

  /** The registry: both events at schema version 1. */
  public static final EventTypes TYPES =
      EventTypes.builder()
          .register(ORDER_CREATED, 1, OrderCreated.class)
          .register(STOCK_UPDATED, 1, StockUpdated.class)
          .build();

  private ShopEvents() {}

  /**
   * An order was placed (key: the customer).
   *
   * @param orderId the order
   * @param customerId who placed it
   * @param seq the customer's order number (1, 2, 3... in commit order)
   * @param amountCents the order's amount
   * @param sku the product ordered
   * @param quantity how many
   */
  public record OrderCreated(
      UUID orderId, String customerId, long seq, long amountCents, String sku, int quantity) {}

  /**
   * The inventory deducted stock for an order (key: the sku).
   *
   * @param sku the product
   * @param delta the change (negative: deducted)
   * @param stock the stock after the change
   * @param orderId the order that caused it
   */
  public record StockUpdated(String sku, int delta, long stock, UUID orderId) {}
}
