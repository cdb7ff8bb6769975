package serve

import (
	"context"
	"fmt"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// Retention: state is kept for Config.Retain after its session's last
// request, then deleted by Maintain (or ctxkit serve gc).

// GC deletes what st holds past retain (sessions idle longer, with their
// decisions, summaries and originals; usage rows older) and returns the
// rows deleted and the store's size after.
func GC(ctx context.Context, st store.Store, retain time.Duration) (deleted, size int64, err error) {
	if retain <= 0 {
		return 0, 0, fmt.Errorf("retention %s: must be positive", retain)
	}
	if deleted, err = st.Prune(ctx, time.Now().Add(-retain)); err != nil {
		return deleted, 0, fmt.Errorf("deleting state older than %s: %w", retain, err)
	}
	size, err = st.Size(ctx)
	return deleted, size, err
}

// Maintain runs retention every interval (at most an hour; 0: an hour)
// until ctx ends, first at once, and keeps the store-size metric current.
func (s *Server) Maintain(ctx context.Context, interval time.Duration) {
	if interval <= 0 || interval > time.Hour {
		interval = time.Hour
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		s.gc(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Server) gc(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	n, size, err := GC(ctx, s.root, s.cfg.Retain)
	s.m.pruned.Add(float64(n))
	if err != nil {
		s.log.Warn("retention", "err", err)
		return
	}
	s.m.storeBytes.Set(float64(size))
	if n > 0 {
		s.log.Info("retention: deleted old state", "rows", n, "retain", s.cfg.Retain, "store_bytes", size)
	}
}
