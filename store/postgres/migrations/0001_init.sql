-- ctxkit serve's state: sessions, their decisions (compare-and-set on
-- sessions.version), summaries and recall originals by content hash, usage.
CREATE TABLE sessions (
	id              text PRIMARY KEY,
	provider        text NOT NULL DEFAULT '',
	model           text NOT NULL DEFAULT '',
	version         bigint NOT NULL DEFAULT 0,
	ndecisions      bigint NOT NULL DEFAULT 0,
	created         timestamptz NOT NULL,
	updated         timestamptz NOT NULL,
	requests        bigint NOT NULL DEFAULT 0,
	client_tokens   bigint NOT NULL DEFAULT 0,
	upstream_tokens bigint NOT NULL DEFAULT 0,
	input           bigint NOT NULL DEFAULT 0,
	cache_read      bigint NOT NULL DEFAULT 0,
	cache_write     bigint NOT NULL DEFAULT 0,
	output          bigint NOT NULL DEFAULT 0,
	saved_usd       double precision NOT NULL DEFAULT 0,
	compactions     bigint NOT NULL DEFAULT 0,
	clears          bigint NOT NULL DEFAULT 0,
	fail_open       bigint NOT NULL DEFAULT 0
);
CREATE INDEX sessions_updated ON sessions (updated DESC, id);

CREATE TABLE decisions (
	session text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	seq     bigint NOT NULL,
	kind    text NOT NULL,
	hashes  jsonb NOT NULL,
	key     text NOT NULL DEFAULT '',
	data    bytea,
	at      timestamptz NOT NULL,
	PRIMARY KEY (session, seq)
);

CREATE TABLE summaries (
	key     text PRIMARY KEY,
	session text NOT NULL,
	model   text NOT NULL,
	text    text NOT NULL,
	method  text NOT NULL,
	at      timestamptz NOT NULL
);

CREATE TABLE originals (
	hash    text PRIMARY KEY,
	session text NOT NULL,
	tool    text NOT NULL,
	label   text NOT NULL,
	content bytea NOT NULL,
	at      timestamptz NOT NULL
);

CREATE TABLE usage (
	id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	session         text NOT NULL,
	provider        text NOT NULL,
	model           text NOT NULL,
	at              timestamptz NOT NULL,
	client_tokens   bigint NOT NULL,
	upstream_tokens bigint NOT NULL,
	input           bigint NOT NULL,
	cache_read      bigint NOT NULL,
	cache_write     bigint NOT NULL,
	output          bigint NOT NULL,
	saved_usd       double precision NOT NULL
);
