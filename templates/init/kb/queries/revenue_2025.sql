-- question: total amount of the orders placed in 2025 (revenue)
SELECT sum(amount) AS revenue
FROM orders
WHERE ordered_at >= DATE '2025-01-01' AND ordered_at < DATE '2026-01-01'
