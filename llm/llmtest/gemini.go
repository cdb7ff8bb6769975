package llmtest

import "net/http"

func (s *Server) serveGemini(w http.ResponseWriter, r *http.Request, c *Call) {
	s.finish(c, http.StatusNotFound, "Not Found")
	writeJSON(w, http.StatusNotFound, nil, obj{})
}
