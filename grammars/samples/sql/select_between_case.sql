SELECT
    business_type,
    CASE some_var
    WHEN 'hello' THEN 3
    WHEN 'hi' THEN 12
    ELSE 0
    END as a_case_statement
FROM
    benchmark_summaries
WHERE
    avg_click_rate NOT BETWEEN 0 and 1 + 1 + some_value
    AND some_other_thing BETWEEN 0 - 1 * another_value and 1
    AND another_thing BETWEEN -another_value and 0