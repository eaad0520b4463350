package com.example.shop.inventory;

/** The {@code order.created} event's JSON payload, as the listener reads it. */
public record OrderCreated(String order, String sku, int quantity) {}
