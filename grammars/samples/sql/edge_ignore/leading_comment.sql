-- leading comment
SELECT 1