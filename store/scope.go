package store

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// TenantLen is the length of a tenant id: 32 hex digits (128 bits of an
// HMAC-SHA-256).
const TenantLen = 32

// ErrNoTenant: a tenant-scoped operation was asked of a store without a
// tenant.
var ErrNoTenant = errors.New("store: no tenant (every session, decision, summary, original and usage row belongs to one)")

// Tenant derives a tenant id from the install's secret and a credential
// (an API key, a bearer token, a proxy key's tenant name), under a label
// that keeps kinds of credential apart. The id names the tenant without
// revealing the credential: it is an HMAC, and the secret never leaves
// the store.
func Tenant(secret []byte, label, credential string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(label))
	m.Write([]byte{0})
	m.Write([]byte(credential))
	return hex.EncodeToString(m.Sum(nil))[:TenantLen]
}

// ValidTenant reports whether id has a tenant id's form.
func ValidTenant(id string) bool {
	if len(id) != TenantLen {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}

// Scope returns the view of s that holds tenant's state only: every
// session id, summary key and original hash it is given is stored under
// the tenant's prefix, and it reads nothing else. Two tenants' views never
// see each other's rows, whatever session ids, summary keys or content
// hashes collide. Secret, Prune and Size are the whole store's.
func Scope(s Store, tenant string) (Store, error) {
	if !ValidTenant(tenant) {
		return nil, fmt.Errorf("%w: %q is not a tenant id", ErrNoTenant, tenant)
	}
	return scoped{s, tenant + "/"}, nil
}

// TenantOf returns the tenant a scoped row id (a session id, a summary key,
// an original's hash as stored) belongs to, and the id within it.
func TenantOf(stored string) (tenant, id string, ok bool) {
	t, id, ok := strings.Cut(stored, "/")
	if !ok || !ValidTenant(t) {
		return "", stored, false
	}
	return t, id, true
}

type scoped struct {
	s      Store
	prefix string
}

func (v scoped) in(id string) string  { return v.prefix + id }
func (v scoped) out(id string) string { return strings.TrimPrefix(id, v.prefix) }

func (v scoped) Session(ctx context.Context, id string) (Session, error) {
	x, err := v.s.Session(ctx, v.in(id))
	x.ID = v.out(x.ID)
	return x, err
}

// Sessions lists the tenant's sessions among the store's most recently
// updated (up to 20×limit of them).
func (v scoped) Sessions(ctx context.Context, limit int) ([]Session, error) {
	all, err := v.s.Sessions(ctx, 20*limit)
	var out []Session
	for _, x := range all {
		if strings.HasPrefix(x.ID, v.prefix) && len(out) < limit {
			x.ID = v.out(x.ID)
			out = append(out, x)
		}
	}
	return out, err
}

func (v scoped) Decisions(ctx context.Context, session string) ([]Decision, int64, error) {
	ds, n, err := v.s.Decisions(ctx, v.in(session))
	for i := range ds {
		if ds[i].Key != "" {
			ds[i].Key = v.out(ds[i].Key)
		}
	}
	return ds, n, err
}

func (v scoped) Commit(ctx context.Context, info Session, want int64, ds []Decision) (int64, error) {
	info.ID = v.in(info.ID)
	in := make([]Decision, len(ds))
	for i, d := range ds {
		if d.Key != "" {
			d.Key = v.in(d.Key)
		}
		in[i] = d
	}
	return v.s.Commit(ctx, info, want, in)
}

func (v scoped) PutSummary(ctx context.Context, x Summary) error {
	x.Key, x.Session = v.in(x.Key), v.in(x.Session)
	return v.s.PutSummary(ctx, x)
}

func (v scoped) Summary(ctx context.Context, key string) (Summary, error) {
	x, err := v.s.Summary(ctx, v.in(key))
	x.Key, x.Session = v.out(x.Key), v.out(x.Session)
	return x, err
}

func (v scoped) PutOriginals(ctx context.Context, os []Original) error {
	in := make([]Original, len(os))
	for i, o := range os {
		o.Hash, o.Session = v.in(o.Hash), v.in(o.Session)
		in[i] = o
	}
	return v.s.PutOriginals(ctx, in)
}

func (v scoped) Original(ctx context.Context, hash string) (Original, error) {
	o, err := v.s.Original(ctx, v.in(hash))
	o.Hash, o.Session = v.out(o.Hash), v.out(o.Session)
	return o, err
}

func (v scoped) AddUsage(ctx context.Context, u Usage) error {
	u.Session = v.in(u.Session)
	return v.s.AddUsage(ctx, u)
}

func (v scoped) Secret(ctx context.Context) ([]byte, error) { return v.s.Secret(ctx) }
func (v scoped) Prune(ctx context.Context, before time.Time) (int64, error) {
	return v.s.Prune(ctx, before)
}
func (v scoped) Size(ctx context.Context) (int64, error) { return v.s.Size(ctx) }

// Close does nothing: the view does not own the store.
func (v scoped) Close() error { return nil }
