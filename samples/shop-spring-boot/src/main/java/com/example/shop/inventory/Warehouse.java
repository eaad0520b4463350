package com.example.shop.inventory;

/** The warehouse's API (a remote call in a real shop), told of each reservation. */
public interface Warehouse {

  /** Tells the warehouse to set the order's goods aside; may fail (a timeout). */
  void reserved(OrderCreated order);
}
