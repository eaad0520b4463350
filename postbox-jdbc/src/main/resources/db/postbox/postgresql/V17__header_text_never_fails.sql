-- Postbox, version 17: the tenant of a dead letter can no longer make its insert fail.
--
-- postbox_header_text (V12) computes the stored column postbox_dead_letter.tenant from the record's headers with
-- convert_from(..., 'UTF8'), which raises SQLSTATE 22021 for a header value holding a NUL byte or invalid UTF-8. Any
-- producer could so write a ce_tenant that made every dead-letter insert of its record fail, and the consumer retried
-- that insert forever (issue 38). The function now returns such a value escaped instead: the marker \~ followed by
-- PostgreSQL's escape format of the bytes (encode(..., 'escape'): a NUL is \000, a byte above 0x7F \ooo, a
-- backslash \\). Valid UTF-8 text comes back exactly as before, so rows stored before this version keep their tenant;
-- the header itself is kept byte-identical in header_values either way. Nothing is rewritten.
CREATE OR REPLACE FUNCTION postbox_header_text(names text[], vals bytea[], wanted text[]) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    raw bytea;
BEGIN
    SELECT vals[i] INTO raw
    FROM generate_subscripts(names, 1) AS i
    WHERE lower(names[i]) = ANY (wanted) AND vals[i] IS NOT NULL
    ORDER BY i LIMIT 1;
    IF raw IS NULL THEN
        RETURN NULL;
    END IF;
    IF position('\x00'::bytea IN raw) = 0 THEN
        BEGIN
            RETURN convert_from(raw, 'UTF8');
        EXCEPTION WHEN character_not_in_repertoire OR untranslatable_character THEN
            -- not valid UTF-8: escaped below
        END;
    END IF;
    RETURN '\~' || encode(raw, 'escape');
END
$$;
