package com.example.shop.orders;

import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/** An order, a JPA entity on the application's DataSource. */
@Entity
@Table(name = "orders")
public class PurchaseOrder {

  @Id private String id;
  private String customer;
  private String sku;
  private int quantity;

  protected PurchaseOrder() {}

  public PurchaseOrder(String id, String customer, String sku, int quantity) {
    this.id = id;
    this.customer = customer;
    this.sku = sku;
    this.quantity = quantity;
  }

  public String getId() {
    return id;
  }

  public String getCustomer() {
    return customer;
  }

  public String getSku() {
    return sku;
  }

  public int getQuantity() {
    return quantity;
  }
}
