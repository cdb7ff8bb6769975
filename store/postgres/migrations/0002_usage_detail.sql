-- Usage rows carry the ladder's counters too (version 1 kept them only in
-- the session totals), and are found by session and time, as are a
-- session's recall originals.
ALTER TABLE usage
	ADD COLUMN compactions bigint NOT NULL DEFAULT 0,
	ADD COLUMN clears      bigint NOT NULL DEFAULT 0,
	ADD COLUMN fail_open   bigint NOT NULL DEFAULT 0;
CREATE INDEX usage_session_at ON usage (session, at);
CREATE INDEX originals_session ON originals (session, at);
