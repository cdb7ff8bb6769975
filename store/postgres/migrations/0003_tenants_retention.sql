-- The install's secret, from which tenant ids are derived (an HMAC of each
-- client's credential), and the indexes retention deletes by. Tenants need
-- no column: every session id, summary key and original hash is stored
-- under its tenant's prefix (store.Scope).
CREATE TABLE install (
	name  text PRIMARY KEY,
	value bytea NOT NULL
);
CREATE INDEX summaries_at ON summaries (at);
CREATE INDEX originals_at ON originals (at);
CREATE INDEX usage_at ON usage (at);
