package main

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/eri"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/ecsfake"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExporterAsksOncePerRun: the exporter asked the metadata service
// (token PUT + GETs) on every scrape, about a second each off Alibaba
// Cloud; now the instance is looked up once per exporterMetadataTTL, and
// the opt-in cloud checks ask the ECS API once per run, never per scrape
// (issue 27 items 14, 16).
func TestExporterAsksOncePerRun(t *testing.T) {
	f, _ := eriEnv(t)
	md := &ecsfake.Metadata{InstanceID: "i-cli", InstanceType: "ecs.ebmgn8is.32xlarge", Region: "cn-hangzhou"}
	mdSrv := httptest.NewServer(md)
	defer mdSrv.Close()
	h, closer, err := erdma.OpenHost(context.Background(), "/")
	require.NoError(t, err)
	defer closer.Close()

	client := exporterMetadata()
	client.BaseURL = mdSrv.URL
	snap := hostSnapshot(h, true, time.Hour, client, &eri.CloudOptions{Mode: eri.CloudOn, Cache: &eri.ViewCache{}})
	for i := 0; i < 3; i++ {
		s, err := snap(context.Background())
		require.NoError(t, err)
		require.NotNil(t, s.Report)
		require.NotNil(t, s.Report.Host.Instance, "scrape %d knows the instance", i)
		assert.Equal(t, "i-cli", s.Report.Host.Instance.ID)
		var ch health.Finding
		for _, fd := range s.Report.Findings {
			if fd.ID == erdma.FindingNetworkCardChannel {
				ch = fd
			}
		}
		assert.Contains(t, ch.Summary, "0 ERI(s) attached", "the channel check judged the API's view")
	}
	assert.Equal(t, 1, md.Hits("/latest/api/token"), "one metadata lookup for three scrapes")
	assert.Equal(t, 1, f.Count("DescribeInstanceTypes"), "one API lookup for three scrapes")
	assert.Equal(t, 1, f.Count("DescribeNetworkInterfaces"))

	// Without the cache (as before): one lookup per scrape.
	plain := hostSnapshot(h, true, time.Hour, &erdma.MetadataClient{BaseURL: mdSrv.URL}, nil)
	for i := 0; i < 2; i++ {
		_, err := plain(context.Background())
		require.NoError(t, err)
	}
	assert.Equal(t, 3, md.Hits("/latest/api/token"))
}
