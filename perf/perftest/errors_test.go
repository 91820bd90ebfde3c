package perftest

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestErrorLinesNameTheDeviceAndTheProgram(t *testing.T) {
	runs := []Run{
		{Device: "erdma_0", Port: 18515, Client: &Report{Errors: []string{"Couldn't connect to 10.0.0.2:18515"}}, Attempts: 1},
		{Device: "erdma_1", Port: 18516, Attempts: 2, Error: "ib_write_bw: exit status 1"},
	}
	assert.Equal(t, []string{"erdma_0: ib_write_bw: Couldn't connect to 10.0.0.2:18515", "erdma_1: ib_write_bw: exit status 1"}, ErrorLines(runs, "ib_write_bw"))
}
