package erdma

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeMetadata is an ECS metadata service: tokens from PUT latest/api/token
// (TTL header required), items only with a valid token.
type fakeMetadata struct {
	items   map[string]string
	valid   func(token string) bool // nil: every issued token
	issued  atomic.Int32
	delay   time.Duration
	lastTTL atomic.Value
}

func (m *fakeMetadata) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if m.delay > 0 {
		select {
		case <-time.After(m.delay):
		case <-r.Context().Done():
			return
		}
	}
	if r.URL.Path == "/latest/api/token" {
		if r.Method != http.MethodPut {
			http.Error(w, "method", http.StatusMethodNotAllowed)
			return
		}
		ttl := r.Header.Get("X-aliyun-ecs-metadata-token-ttl-seconds")
		if ttl == "" {
			http.Error(w, "ttl required", http.StatusBadRequest)
			return
		}
		m.lastTTL.Store(ttl)
		n := m.issued.Add(1)
		w.Write([]byte("token-" + string(rune('0'+n))))
		return
	}
	tok := r.Header.Get("X-aliyun-ecs-metadata-token")
	ok := strings.HasPrefix(tok, "token-")
	if m.valid != nil {
		ok = ok && m.valid(tok)
	}
	if !ok {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	v, found := m.items[strings.TrimPrefix(r.URL.Path, "/latest/")]
	if !found {
		http.NotFound(w, r)
		return
	}
	w.Write([]byte(v))
}

func goodItems() map[string]string {
	return map[string]string{
		"meta-data/instance-id":            "i-2ze0abcdefgh1234",
		"meta-data/instance/instance-type": "ecs.ebmgn8is.32xlarge",
		"meta-data/region-id":              "cn-beijing",
	}
}

func TestMetadataInstance(t *testing.T) {
	m := &fakeMetadata{items: goodItems()}
	srv := httptest.NewServer(m)
	defer srv.Close()
	inst, err := (&MetadataClient{BaseURL: srv.URL}).Instance(context.Background())
	require.NoError(t, err)
	assert.Equal(t, &Instance{ID: "i-2ze0abcdefgh1234", Type: "ecs.ebmgn8is.32xlarge", Region: "cn-beijing", Source: "metadata"}, inst)
	assert.Equal(t, int32(1), m.issued.Load(), "one token for the whole lookup")
	assert.Equal(t, "60", m.lastTTL.Load())
}

func TestMetadataTokenExpiredRefetched(t *testing.T) {
	// The first token expires after one use: the service answers 401 and
	// the client fetches a new token once.
	var uses atomic.Int32
	m := &fakeMetadata{items: goodItems(), valid: func(tok string) bool {
		if tok == "token-1" {
			return uses.Add(1) == 1
		}
		return true
	}}
	srv := httptest.NewServer(m)
	defer srv.Close()
	inst, err := (&MetadataClient{BaseURL: srv.URL}).Instance(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "cn-beijing", inst.Region)
	assert.Equal(t, int32(2), m.issued.Load())
}

func TestMetadataTokenAlwaysRefused(t *testing.T) {
	m := &fakeMetadata{items: goodItems(), valid: func(string) bool { return false }}
	srv := httptest.NewServer(m)
	defer srv.Close()
	_, err := (&MetadataClient{BaseURL: srv.URL}).Instance(context.Background())
	require.ErrorIs(t, err, ErrMetadataToken)
	assert.Contains(t, err.Error(), "meta-data/instance-id")
}

func TestMetadataNoTokenRefused(t *testing.T) {
	// A GET without the token header is refused by the service.
	m := &fakeMetadata{items: goodItems()}
	srv := httptest.NewServer(m)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/latest/meta-data/instance-id")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}

func TestMetadataSlowServerBounded(t *testing.T) {
	m := &fakeMetadata{items: goodItems(), delay: 10 * time.Second}
	srv := httptest.NewServer(m)
	defer srv.Close()
	start := time.Now()
	_, err := (&MetadataClient{BaseURL: srv.URL, Timeout: 200 * time.Millisecond}).Instance(context.Background())
	require.ErrorIs(t, err, ErrMetadataUnavailable)
	assert.Less(t, time.Since(start), 2*time.Second)
}

func TestMetadataDefaultTimeoutUnreachable(t *testing.T) {
	// A listener that accepts but never answers: the default bound applies.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer srv.Close()
	start := time.Now()
	_, err := (&MetadataClient{BaseURL: srv.URL}).Instance(context.Background())
	require.ErrorIs(t, err, ErrMetadataUnavailable)
	assert.Less(t, time.Since(start), 1500*time.Millisecond)
}

func TestMetadataGarbage(t *testing.T) {
	for _, tc := range []struct {
		name string
		item string
		body string
		want error
	}{
		{"html type", "meta-data/instance/instance-type", "<html><body>error</body></html>", ErrMetadataValue},
		{"binary id", "meta-data/instance-id", "\x00\x01\x02", ErrMetadataValue},
		{"empty region", "meta-data/region-id", "", ErrMetadataValue},
		{"region garbage", "meta-data/region-id", "!!!", ErrMetadataValue},
		{"huge body", "meta-data/instance-id", strings.Repeat("a", 10000), ErrMetadataUnavailable},
		{"id of 129", "meta-data/instance-id", "i-" + strings.Repeat("a", 127), ErrMetadataValue},
		{"id starting with -", "meta-data/instance-id", "-bp67acfmxazb4p", ErrMetadataValue},
		{"type without ecs", "meta-data/instance/instance-type", "ebmgn8is.32xlarge", ErrInstanceType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items := goodItems()
			items[tc.item] = tc.body
			srv := httptest.NewServer(&fakeMetadata{items: items})
			defer srv.Close()
			_, err := (&MetadataClient{BaseURL: srv.URL}).Instance(context.Background())
			require.Error(t, err)
			assert.True(t, errors.Is(err, tc.want), "%v", err)
		})
	}
}

func TestValidInstanceID(t *testing.T) {
	assert.True(t, validInstanceID("i-"+strings.Repeat("a", 126)), "128 characters")
	assert.False(t, validInstanceID("i-"+strings.Repeat("a", 127)), "129 characters")
	assert.True(t, validInstanceID("i-2ze0abcdefgh1234"))
	assert.True(t, validInstanceID("a"))
	assert.False(t, validInstanceID(""))
	assert.False(t, validInstanceID("i-2ze0 abc"))
}

func TestMetadataNotFound(t *testing.T) {
	items := goodItems()
	delete(items, "meta-data/region-id")
	srv := httptest.NewServer(&fakeMetadata{items: items})
	defer srv.Close()
	_, err := (&MetadataClient{BaseURL: srv.URL}).Instance(context.Background())
	require.ErrorIs(t, err, ErrMetadataUnavailable)
	assert.Contains(t, err.Error(), "HTTP 404")
}

func TestParseInstance(t *testing.T) {
	inst, err := ParseInstance(context.Background(), strings.NewReader(`{"id":"i-bp1abc","type":"ecs.gn8is-2x.8xlarge","region":"cn-hangzhou","source":"metadata"}`))
	require.NoError(t, err)
	assert.Equal(t, &Instance{ID: "i-bp1abc", Type: "ecs.gn8is-2x.8xlarge", Region: "cn-hangzhou", Source: "recorded"}, inst)
	for _, bad := range []string{``, `{`, `[]`, `{"id":"i-1","type":"garbage","region":"cn-hangzhou"}`, `{"id":"","type":"ecs.g7.large","region":"cn-hangzhou"}`} {
		_, err := ParseInstance(context.Background(), strings.NewReader(bad))
		assert.Error(t, err, bad)
		if err != nil {
			assert.Contains(t, err.Error(), "recorded instance")
		}
	}
}

func FuzzParseInstance(f *testing.F) {
	f.Add(`{"id":"i-bp1abc","type":"ecs.ebmgn8is.32xlarge","region":"cn-beijing"}`)
	f.Add(`{"id":1}`)
	f.Add(`null`)
	f.Fuzz(func(t *testing.T, s string) {
		inst, err := ParseInstance(context.Background(), strings.NewReader(s))
		if err == nil {
			_, perr := ParseInstanceType(inst.Type)
			require.NoError(t, perr)
		}
	})
}
