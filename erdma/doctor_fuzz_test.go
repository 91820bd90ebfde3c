package erdma

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzDiagnose feeds the doctor inventories decoded from arbitrary JSON
// (seeded with the hand-built healthy host and broken variants): it must
// always return one finding per check and never panic.
func FuzzDiagnose(f *testing.F) {
	for _, mut := range []func(*Inventory){
		func(*Inventory) {},
		func(inv *Inventory) { inv.Devices = nil },
		func(inv *Inventory) { inv.Devices[1].Transport = TransportIWARP; inv.Memlock = &Limit{Soft: 65536} },
		func(inv *Inventory) { inv.Netdevs = inv.Netdevs[:1]; inv.GPU = nil },
	} {
		inv := handHealthy()
		mut(inv)
		b, err := json.Marshal(inv)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte(`{"devices":[{"name":"erdma_0","erdma":true,"ports":[{"number":1,"recommended_gid_index":99}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var inv Inventory
		if json.Unmarshal(b, &inv) != nil {
			return
		}
		if inv.Instance != nil {
			SetInstance(&inv, inv.Instance)
		}
		r := Diagnose(context.Background(), &inv, DoctorOptions{})
		if len(r.Findings) != len(HostChecks()) {
			t.Fatalf("%d findings", len(r.Findings))
		}
		for _, f := range r.Findings {
			if strings.Contains(f.Summary, "internal error") {
				t.Fatalf("%s: %s", f.ID, f.Summary)
			}
		}
		var sb strings.Builder
		if err := WritePrometheus(&sb, r); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzMetadataBody serves arbitrary bodies as every metadata item: the
// client returns an instance that validates, or an error; never a panic.
func FuzzMetadataBody(f *testing.F) {
	for _, s := range []string{"ecs.ebmgn8is.32xlarge", "i-bp1abc", "cn-beijing", "", "<html>", "\x00\xff", strings.Repeat("a", 5000)} {
		f.Add(s)
	}
	var body atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/latest/api/token" {
			w.Write([]byte("tok"))
			return
		}
		w.Write([]byte(body.Load().(string)))
	}))
	f.Cleanup(srv.Close)
	c := &MetadataClient{BaseURL: srv.URL}
	f.Fuzz(func(t *testing.T, s string) {
		body.Store(s)
		inst, err := c.Instance(context.Background())
		if err != nil {
			return
		}
		if _, err := ParseInstanceType(inst.Type); err != nil {
			t.Fatalf("accepted type %q", inst.Type)
		}
	})
}
