package importertest

import (
	"database/sql"
	"encoding/json"
	"fmt"

	_ "modernc.org/sqlite" // pure-Go SQLite driver
)

// OpencodeStore describes the sessions of an opencode database.
type OpencodeStore struct {
	Sessions []struct {
		ID        string `json:"id"`
		ProjectID string `json:"project_id"`
		ParentID  string `json:"parent_id"`
		Directory string `json:"directory"`
		Title     string `json:"title"`
		Version   string `json:"version"`
		Created   int64  `json:"time_created"`
		Updated   int64  `json:"time_updated"`
		Messages  []struct {
			ID      string          `json:"id"`
			Created int64           `json:"time_created"`
			Data    json.RawMessage `json:"data"`
			Parts   []struct {
				ID   string          `json:"id"`
				Data json.RawMessage `json:"data"`
			} `json:"parts"`
		} `json:"messages"`
	} `json:"sessions"`
}

// schema is the part of opencode's schema the importer reads, with the
// columns opencode declares.
const schema = `
CREATE TABLE project (id TEXT PRIMARY KEY, worktree TEXT NOT NULL, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL);
CREATE TABLE session (
	id TEXT PRIMARY KEY, project_id TEXT NOT NULL REFERENCES project(id) ON DELETE CASCADE, workspace_id TEXT, parent_id TEXT,
	slug TEXT NOT NULL, directory TEXT NOT NULL, path TEXT, title TEXT NOT NULL, version TEXT NOT NULL, share_url TEXT,
	cost REAL NOT NULL DEFAULT 0, tokens_input INTEGER NOT NULL DEFAULT 0, tokens_output INTEGER NOT NULL DEFAULT 0,
	time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, time_compacting INTEGER, time_archived INTEGER);
CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
	time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL REFERENCES message(id) ON DELETE CASCADE, session_id TEXT NOT NULL,
	time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
CREATE INDEX part_message_id_id_idx ON part (message_id, id);
`

// WriteOpencodeDB creates the database at path holding the store that
// desc (JSON, an OpencodeStore) describes.
func WriteOpencodeDB(path string, desc []byte) error {
	var st OpencodeStore
	if err := json.Unmarshal(desc, &st); err != nil {
		return fmt.Errorf("opencode store description: %w", err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Exec(schema); err != nil {
		return err
	}
	projects := map[string]bool{}
	for _, s := range st.Sessions {
		if !projects[s.ProjectID] {
			projects[s.ProjectID] = true
			if _, err := db.Exec(`INSERT INTO project VALUES (?, ?, ?, ?)`, s.ProjectID, s.Directory, s.Created, s.Updated); err != nil {
				return err
			}
		}
		var parent any
		if s.ParentID != "" {
			parent = s.ParentID
		}
		if _, err := db.Exec(`INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, time_created, time_updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			s.ID, s.ProjectID, parent, s.ID, s.Directory, s.Title, s.Version, s.Created, s.Updated); err != nil {
			return err
		}
		for _, m := range s.Messages {
			if _, err := db.Exec(`INSERT INTO message VALUES (?, ?, ?, ?, ?)`, m.ID, s.ID, m.Created, m.Created, string(m.Data)); err != nil {
				return err
			}
			for _, p := range m.Parts {
				if _, err := db.Exec(`INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)`, p.ID, m.ID, s.ID, m.Created, m.Created, string(p.Data)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
