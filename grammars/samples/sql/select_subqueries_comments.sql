SELECT DISTINCT c.name, count(*) AS n_orders, sum(o.total) / count(DISTINCT o.id) avg_total
FROM customers AS c /* every customer */
    LEFT OUTER JOIN orders o USING (customer_id)
WHERE c.country IN ('DE', 'FR', 'IT') -- EU only
  AND NOT EXISTS (SELECT 1 FROM blocked b WHERE b.customer_id = c.customer_id)
  AND c.created_at >= (SELECT min(started) FROM campaigns)
  AND c.email LIKE '%@example.com' ESCAPE '!'
  AND o.note IS NOT NULL
GROUP BY c.name
HAVING count(*) > 2
ORDER BY n_orders DESC NULLS LAST, c.name
LIMIT 10 OFFSET 20;