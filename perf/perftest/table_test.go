package perftest

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteTableClientRowsStatusAndErrorLines(t *testing.T) {
	f, err := os.Open("testdata/A03_ib_write_bw_client_q4_rdma_cm_gbits_roce_dgx_spark.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := Parse(context.Background(), f)
	require.NoError(t, err)
	runs := []Run{{Device: "erdma_0", Port: 18515, Client: rep, Attempts: 1}, {Device: "erdma_1", Port: 18516, Attempts: 2, Error: "ib_write_bw: exit status 1"}}
	sum := Judge(runs, 0, false)
	var b strings.Builder
	require.NoError(t, WriteTable(&b, sum, false, false))
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	assert.Equal(t, "DEVICE   PORT   SIZE   ITERATIONS  AVG_GBPS  PEAK_GBPS  MPPS    ATTEMPTS", strings.TrimRight(lines[0], " "))
	assert.Contains(t, lines[len(lines)-2], "erdma_1  18516  -")
	assert.True(t, strings.HasPrefix(lines[len(lines)-1], "status: fail (total "), lines[len(lines)-1])
	assert.Equal(t, []string{"erdma_1: ib_write_bw: exit status 1"}, ErrorLines(runs, "ib_write_bw"))
}
