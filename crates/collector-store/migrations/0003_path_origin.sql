-- Whether a path was learned (walked over imported interfaces and confirmed by a report's
-- MACs) rather than imported. Rows written before this column were all taken as imported.
ALTER TABLE path ADD COLUMN learned BOOLEAN NOT NULL DEFAULT FALSE;
