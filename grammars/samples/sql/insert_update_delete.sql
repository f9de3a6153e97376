INSERT into tbl_b (col1) values (123);

INSERT INTO tbl_c (col1, col2) VALUES (1, 'it''s'), (2, NULL);

UPDATE table1
SET a = CASE WHEN t2.column = 'T' THEN TRUE
             WHEN t2.column = 'F' THEN FALSE
             ELSE NULL
        END
FROM table2 t2;

DELETE FROM table_name
WHERE a > 0;