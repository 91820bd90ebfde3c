package fleet

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestDiscoverRank(t *testing.T) {
	tests := []struct {
		name string
		env  func(string) string
		want Rank
		err  string
	}{
		{"open mpi", env("OMPI_COMM_WORLD_RANK", "3", "OMPI_COMM_WORLD_SIZE", "16"), Rank{3, 16, "openmpi"}, ""},
		{"pmi (mpich, intel mpi)", env("PMI_RANK", "0", "PMI_SIZE", "2"), Rank{0, 2, "pmi"}, ""},
		{"slurm srun", env("SLURM_PROCID", "7", "SLURM_NTASKS", "8"), Rank{7, 8, "slurm"}, ""},
		{"open mpi wins over slurm inside an allocation", env("OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "2", "SLURM_PROCID", "0", "SLURM_NTASKS", "1"), Rank{1, 2, "openmpi"}, ""},
		{"none", env(), Rank{}, "no launcher environment"},
		{"garbage rank", env("PMI_RANK", "x", "PMI_SIZE", "2"), Rank{}, `PMI_RANK="x" is not a rank`},
		{"rank outside size", env("SLURM_PROCID", "8", "SLURM_NTASKS", "8"), Rank{}, "rank 8 outside a job of size 8"},
		{"size missing", env("OMPI_COMM_WORLD_RANK", "0"), Rank{}, "is not a job size"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DiscoverRank(tc.env)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestRendezvousAddr(t *testing.T) {
	tests := []struct {
		name, flag string
		env        func(string) string
		want       string
	}{
		{"flag without port", "gpu001", env(), "gpu001:18530"},
		{"flag with port", "10.1.0.5:9000", env(), "10.1.0.5:9000"},
		{"env", "", env("ERDMAKIT_RENDEZVOUS", "head"), "head:18530"},
		{"torch style", "", env("MASTER_ADDR", "node7", "MASTER_PORT", "29500"), "node7:29500"},
		{"slurm node list", "", env("SLURM_JOB_NODELIST", "gpu[003-010,12],cpu1"), "gpu003:18530"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RendezvousAddr(tc.flag, tc.env)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	_, err := RendezvousAddr("", env())
	assert.ErrorContains(t, err, "--rendezvous")
}

func TestFirstHost(t *testing.T) {
	for in, want := range map[string]string{
		"node01": "node01", "a,b": "a", "gpu[1-4]": "gpu1", "gpu[07,9]-ib": "gpu07-ib", "x[3]": "x3",
	} {
		got, err := FirstHost(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "gpu]1[", "gpu[]"} {
		_, err := FirstHost(bad)
		assert.Error(t, err, bad)
	}
}

func FuzzFirstHost(f *testing.F) {
	for _, s := range []string{"node01", "gpu[003-010,12],cpu1", "a[1]b[2]", "[", "]["} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { _, _ = FirstHost(s) })
}

// TestResolveRankFlagsAndLauncher: --ranks without --rank under srun ignored
// SLURM_PROCID (every process claimed rank -1 or failed).
func TestResolveRankFlagsAndLauncher(t *testing.T) {
	slurm := func(k string) string {
		return map[string]string{"SLURM_PROCID": "3", "SLURM_NTASKS": "8"}[k]
	}
	none := func(string) string { return "" }
	r, err := ResolveRank(-1, 8, slurm)
	require.NoError(t, err)
	assert.Equal(t, 3, r.Rank)
	assert.Equal(t, 8, r.Size)
	r, err = ResolveRank(1, 0, slurm)
	require.NoError(t, err)
	assert.Equal(t, Rank{Rank: 1, Size: 8, Launcher: "slurm+flag"}, r)
	r, err = ResolveRank(2, 4, slurm)
	require.NoError(t, err)
	assert.Equal(t, Rank{Rank: 2, Size: 4, Launcher: "flag"}, r)
	_, err = ResolveRank(-1, 8, none)
	assert.ErrorIs(t, err, ErrNoLauncher)
	assert.Contains(t, err.Error(), "--rank and --ranks")
	r, err = ResolveRank(-1, 0, slurm)
	require.NoError(t, err)
	assert.Equal(t, "slurm", r.Launcher)
}
