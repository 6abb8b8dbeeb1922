-- question: how many customers are there in each country
SELECT country, count(*) AS customers
FROM customers
GROUP BY country
