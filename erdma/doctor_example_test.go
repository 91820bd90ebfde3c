package erdma_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
)

func ExampleLookupProfile() {
	for _, t := range []string{"ecs.ebmgn9gc.64xlarge", "ecs.gn8is-2x.8xlarge", "ecs.ebmgn8is.32xlarge", "ecs.g7.large"} {
		p, ok, err := erdma.LookupProfile(t)
		switch {
		case err != nil:
			fmt.Println(err)
		case !ok:
			fmt.Printf("%s: unknown\n", t)
		default:
			fmt.Printf("%s: family %s, ERIs %d, write %g Gbit/s (0 = unknown)\n", t, p.Family, p.ERIs, p.WriteGbps)
		}
	}
	// Output:
	// ecs.ebmgn9gc.64xlarge: family ebmgn9gc, ERIs 2, write 380 Gbit/s (0 = unknown)
	// ecs.gn8is-2x.8xlarge: family gn8is-2x, ERIs 1, write 25 Gbit/s (0 = unknown)
	// ecs.ebmgn8is.32xlarge: family ebmgn8is, ERIs 2, write 0 Gbit/s (0 = unknown)
	// ecs.g7.large: unknown
}

func ExampleParseInstanceType() {
	t, err := erdma.ParseInstanceType("ecs.gn8is-2x.8xlarge")
	fmt.Println(t.Family, t.Base, t.Size, err)
	_, err = erdma.ParseInstanceType("gn8is-2x")
	fmt.Println(err)
	// Output:
	// gn8is-2x gn8is 8xlarge <nil>
	// instance type "gn8is-2x": not an ECS instance type (want ecs.<family>.<size>)
}

// The metadata client against a stand-in for 100.100.100.200.
func ExampleMetadataClient() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/latest/api/token" {
			fmt.Fprint(w, "t0ken")
			return
		}
		if r.Header.Get("X-aliyun-ecs-metadata-token") != "t0ken" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, map[string]string{
			"/latest/meta-data/instance-id":            "i-bp1example",
			"/latest/meta-data/instance/instance-type": "ecs.ebmgn8is.32xlarge",
			"/latest/meta-data/region-id":              "cn-hangzhou",
		}[r.URL.Path])
	}))
	defer srv.Close()
	inst, err := (&erdma.MetadataClient{BaseURL: srv.URL}).Instance(context.Background())
	fmt.Println(inst.ID, inst.Type, inst.Region, inst.Source, err)
	// Output:
	// i-bp1example ecs.ebmgn8is.32xlarge cn-hangzhou metadata <nil>
}

func ExampleWritePrometheus() {
	rep := &erdma.Report{Status: health.Fail, Findings: []health.Finding{
		{ID: "port-active", Severity: health.OK},
		{ID: "memlock", Severity: health.Fail},
		{ID: "gid-index", Severity: health.Skip},
	}}
	var b strings.Builder
	_ = erdma.WritePrometheus(&b, rep)
	os.Stdout.WriteString(b.String())
	// Output:
	// # HELP erdmakit_doctor_check Result of one erdmakit doctor check: 0 ok, 1 warn, 2 fail, -1 skip.
	// # TYPE erdmakit_doctor_check gauge
	// erdmakit_doctor_check{id="port-active"} 0
	// erdmakit_doctor_check{id="memlock"} 2
	// erdmakit_doctor_check{id="gid-index"} -1
	// # HELP erdmakit_doctor_status Overall erdmakit doctor status, the worst check: 0 ok, 1 warn, 2 fail; 3 the doctor could not run.
	// # TYPE erdmakit_doctor_status gauge
	// erdmakit_doctor_status 2
}

func ExampleOpenHost_timeout() {
	// Ctrl-C (a cancelled context) ends the unpacking of a .tar.gz root
	// between entries and within reads; what was unpacked is removed.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, closer, err := erdma.OpenHost(ctx, "../testdata/hosts/gn8is-single.tar.gz")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closer.Close()
	inv, err := erdma.ReadInventory(ctx, h, erdma.InventoryOptions{SkipTools: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(inv.Devices), "device(s)")
	// Output: 1 device(s)
}
