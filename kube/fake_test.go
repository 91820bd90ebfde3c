package kube

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeAPI is an API server of a few objects: nodes (GET, PATCH of labels and
// of status conditions as the real server merges them), one Job and its
// pods. It records every request.
type fakeAPI struct {
	mu       sync.Mutex
	token    string
	nodes    map[string]map[string]any
	jobs     map[string][]byte // "ns/name" -> JSON
	pods     func(selector string) []byte
	requests []string
}

func newFakeAPI(t *testing.T) (*fakeAPI, *Client) {
	t.Helper()
	f := &fakeAPI{token: "t0ken", nodes: map[string]map[string]any{}, jobs: map[string][]byte{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := NewClient(Config{Server: srv.URL, Token: f.token})
	require.NoError(t, err)
	return f, c
}

func (f *fakeAPI) addNode(t *testing.T, raw []byte) {
	var n map[string]any
	require.NoError(t, json.Unmarshal(raw, &n))
	f.nodes[n["metadata"].(map[string]any)["name"].(string)] = n
}

func (f *fakeAPI) count(prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.requests {
		if strings.HasPrefix(r, prefix) {
			n++
		}
	}
	return n
}

func status(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "message": msg, "code": code})
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path)
	if r.Header.Get("Authorization") != "Bearer "+f.token {
		status(w, 401, "Unauthorized", "Unauthorized")
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	body, _ := io.ReadAll(r.Body)
	switch {
	case len(parts) >= 4 && parts[0] == "api" && parts[2] == "nodes":
		n, ok := f.nodes[parts[3]]
		if !ok {
			status(w, 404, "NotFound", `nodes "`+parts[3]+`" not found`)
			return
		}
		switch {
		case r.Method == "GET" && len(parts) == 4:
		case r.Method == "PATCH" && len(parts) == 4 && r.Header.Get("Content-Type") == mergePatch:
			var p struct {
				Metadata struct {
					Labels map[string]*string `json:"labels"`
				} `json:"metadata"`
			}
			if json.Unmarshal(body, &p) != nil {
				status(w, 400, "BadRequest", "bad patch")
				return
			}
			md := n["metadata"].(map[string]any)
			labels, _ := md["labels"].(map[string]any)
			if labels == nil {
				labels = map[string]any{}
				md["labels"] = labels
			}
			for k, v := range p.Metadata.Labels {
				if v == nil {
					delete(labels, k)
				} else {
					labels[k] = *v
				}
			}
		case r.Method == "PATCH" && len(parts) == 5 && parts[4] == "status" && r.Header.Get("Content-Type") == strategicPatch:
			var p struct {
				Status struct {
					Conditions []map[string]any `json:"conditions"`
				} `json:"status"`
			}
			if json.Unmarshal(body, &p) != nil {
				status(w, 400, "BadRequest", "bad patch")
				return
			}
			st, _ := n["status"].(map[string]any)
			if st == nil {
				st = map[string]any{}
				n["status"] = st
			}
			conds, _ := st["conditions"].([]any)
			for _, pc := range p.Status.Conditions {
				var kept []any
				for _, c := range conds {
					if c.(map[string]any)["type"] != pc["type"] {
						kept = append(kept, c)
					}
				}
				if pc["$patch"] != "delete" {
					kept = append(kept, pc)
				}
				conds = kept
			}
			st["conditions"] = conds
		default:
			status(w, 405, "MethodNotAllowed", "no")
			return
		}
		_ = json.NewEncoder(w).Encode(n)
	case len(parts) == 7 && parts[0] == "apis" && parts[5] == "jobs" && r.Method == "GET":
		j, ok := f.jobs[parts[4]+"/"+parts[6]]
		if !ok {
			status(w, 404, "NotFound", `jobs.batch "`+parts[6]+`" not found`)
			return
		}
		_, _ = w.Write(j)
	case len(parts) == 5 && parts[4] == "pods" && r.Method == "GET" && f.pods != nil:
		_, _ = w.Write(f.pods(r.URL.Query().Get("labelSelector")))
	default:
		status(w, 404, "NotFound", "the server could not find the requested resource")
	}
}
