package connect_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/connect"
)

func TestResolvePicksRDMACMOnlyForIWARPWhenAuto(t *testing.T) {
	for _, tc := range []struct {
		m    connect.Method
		t    connect.Transport
		want connect.Method
	}{
		{connect.Auto, connect.IWARP, connect.RDMACM},
		{connect.Auto, connect.RoCE, connect.OOB},
		{connect.Auto, connect.IB, connect.OOB},
		{connect.Auto, connect.UnknownTransport, connect.OOB},
		{connect.Auto, "fake", connect.OOB},
		{connect.OOB, connect.IWARP, connect.OOB},
		{connect.RDMACM, connect.RoCE, connect.RDMACM},
	} {
		assert.Equal(t, tc.want, tc.m.Resolve(tc.t), "%s on %s", tc.m, tc.t)
	}
}

func TestTransportOfNodeTypeAndLinkLayer(t *testing.T) {
	assert.Equal(t, connect.IWARP, connect.TransportOf(4, ""))
	assert.Equal(t, connect.RoCE, connect.TransportOf(1, "Ethernet"))
	assert.Equal(t, connect.IB, connect.TransportOf(1, "InfiniBand"))
	assert.Equal(t, connect.UnknownTransport, connect.TransportOf(1, ""))
	assert.Equal(t, connect.UnknownTransport, connect.TransportOf(-1, "Ethernet"))
}

// The JSON words are the public schema of `bw --json`'s "method".
func TestMethodJSONWordsAreStable(t *testing.T) {
	for m, word := range map[connect.Method]string{connect.Auto: `"auto"`, connect.OOB: `"oob"`, connect.RDMACM: `"rdma_cm"`} {
		b, err := json.Marshal(m)
		require.NoError(t, err)
		assert.Equal(t, word, string(b))
		var back connect.Method
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, m, back)
	}
	_, err := json.Marshal(connect.Method(7))
	assert.ErrorContains(t, err, "connection method 7")
}

func TestParseMethodNamesTheBadWord(t *testing.T) {
	for _, s := range []string{"cm", "rdmacm", "rdma_cm"} {
		m, err := connect.ParseMethod(s)
		require.NoError(t, err)
		assert.Equal(t, connect.RDMACM, m)
	}
	var m connect.Method
	err := m.Set("tcp")
	assert.EqualError(t, err, `connection method "tcp": want auto, oob or rdma_cm`)
}
