-- Order lines of completed orders, with the market, day and shop of their order.
-- Used as the source of item-level metrics (items_sold, product_sales).
SELECT oi.order_item_id,
       oi.order_id,
       oi.product_category,
       oi.quantity,
       oi.unit_price,
       o.region_code,
       o.order_date,
       o.shop_id
FROM order_items AS oi
JOIN orders AS o ON o.order_id = oi.order_id
WHERE o.status = 'completed'
