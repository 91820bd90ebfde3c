package nccl

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The guide's line, step 6 of "enable eRDMA on a GPU instance".
const guideLine = "mpirun --allow-run-as-root -np 16 -npernode 8 -H host1:8,host2:8 --bind-to none " +
	"-mca btl_tcp_if_include eth0 -mca oob_tcp_if_include eth0 -x NCCL_SOCKET_IFNAME=eth0 -x NCCL_DEBUG=INFO -x LD_LIBRARY_PATH " +
	"-x PATH ./build/all_reduce_perf -b 4M -e 4M -f 2 -g 1 -t 1 -n 20"

func TestDefaultCommandIsTheGuideLine(t *testing.T) {
	tagged, err := DefaultCommand().Argv()
	require.NoError(t, err)
	assert.Contains(t, strings.Join(tagged, " "), "--bind-to none --tag-output -mca", "the runner needs the ranks' tags")
	c := DefaultCommand()
	c.TagOutput = false
	argv, err := c.Argv()
	require.NoError(t, err)
	want := strings.Fields(guideLine)
	require.Len(t, argv, len(want))
	for i := range want {
		assert.Equal(t, want[i], argv[i], "token %d", i)
	}
	assert.Equal(t, 16, DefaultCommand().Ranks())
	assert.Equal(t, "host2", DefaultCommand().HostOfRank(9))
	assert.Equal(t, "", DefaultCommand().HostOfRank(16))
}

func TestCommandArgv(t *testing.T) {
	hosts, err := ParseHosts("a:4, b")
	require.NoError(t, err)
	tests := []struct {
		name string
		edit func(*Command)
		want string
		env  []string
	}{
		{"hostfile omits -np and -H", func(c *Command) { c.Hosts = nil; c.Hostfile = "hosts.txt" },
			"mpirun --allow-run-as-root -npernode 8 --hostfile hosts.txt --bind-to none --tag-output -mca btl_tcp_if_include eth0 -mca oob_tcp_if_include eth0 -x NCCL_SOCKET_IFNAME=eth0 -x NCCL_DEBUG=INFO -x LD_LIBRARY_PATH -x PATH ./build/all_reduce_perf -b 4M -e 4M -f 2 -g 1 -t 1 -n 20", nil},
		{"nccl vars, binary, flags, extra args, oversubscribe", func(c *Command) {
			c.Hosts = hosts
			c.RanksPerHost = 4
			c.Oversubscribe = true
			c.Env = append(c.Env, Var{"NCCL_IB_HCA", "erdma_0,erdma_1"}, Var{"NCCL_IB_GID_INDEX", "-1"})
			c.LauncherArgs = []string{"--mca", "plm_rsh_args", "-p 2222"}
			c.Binary = "/opt/nccl-tests/build/all_gather_perf"
			c.TestArgs = []string{"-b", "8", "-e", "8G", "-f", "2"}
		}, "mpirun --allow-run-as-root -np 8 -npernode 4 -H a:4,b:4 --oversubscribe --bind-to none --tag-output -mca btl_tcp_if_include eth0 -mca oob_tcp_if_include eth0 -x NCCL_SOCKET_IFNAME=eth0 -x NCCL_DEBUG=INFO -x NCCL_IB_HCA=erdma_0,erdma_1 -x NCCL_IB_GID_INDEX=-1 -x LD_LIBRARY_PATH -x PATH --mca plm_rsh_args '-p 2222' /opt/nccl-tests/build/all_gather_perf -b 8 -e 8G -f 2", nil},
		{"explicit NCCL_SOCKET_IFNAME wins", func(c *Command) { c.Env = []Var{{"NCCL_SOCKET_IFNAME", "bond0"}}; c.Forward = nil },
			"mpirun --allow-run-as-root -np 16 -npernode 8 -H host1:8,host2:8 --bind-to none --tag-output -mca btl_tcp_if_include eth0 -mca oob_tcp_if_include eth0 -x NCCL_SOCKET_IFNAME=bond0 ./build/all_reduce_perf -b 4M -e 4M -f 2 -g 1 -t 1 -n 20", nil},
		{"srun with hosts", func(c *Command) {
			c.Launcher = LauncherSrun
			c.Env = append(c.Env, Var{"NCCL_IB_HCA", "erdma_0,erdma_1"})
		}, "srun --nodes 2 --ntasks-per-node 8 --mpi=pmix --nodelist host1,host2 --export=ALL,NCCL_SOCKET_IFNAME=eth0,NCCL_DEBUG=INFO ./build/all_reduce_perf -b 4M -e 4M -f 2 -g 1 -t 1 -n 20",
			// srun's own environment holds every variable: with
			// --export=ALL,NAME=VAL the caller's NAME wins (srun(1)).
			[]string{"NCCL_SOCKET_IFNAME=eth0", "NCCL_DEBUG=INFO", "NCCL_IB_HCA=erdma_0,erdma_1"}},
		{"srun in an allocation with a hostfile and np", func(c *Command) {
			c.Launcher = LauncherSrun
			c.Program = "/usr/bin/srun"
			c.Hosts = nil
			c.Hostfile = "nodes"
			c.NP = 12
			c.SrunMPI = "pmi2"
		}, "/usr/bin/srun --ntasks-per-node 8 --ntasks 12 --mpi=pmi2 --nodelist ./nodes --export=ALL,NCCL_SOCKET_IFNAME=eth0,NCCL_DEBUG=INFO ./build/all_reduce_perf -b 4M -e 4M -f 2 -g 1 -t 1 -n 20", []string{"NCCL_SOCKET_IFNAME=eth0", "NCCL_DEBUG=INFO"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultCommand()
			tt.edit(&c)
			argv, err := c.Argv()
			require.NoError(t, err)
			assert.Equal(t, tt.want, ShellJoin(argv))
			assert.Equal(t, tt.env, c.Environ())
		})
	}
}

func TestCommandArgvErrors(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Command)
		msg  string
	}{
		{"no binary", func(c *Command) { c.Binary = "" }, "no nccl-tests binary"},
		{"hosts and hostfile", func(c *Command) { c.Hostfile = "f" }, "use one"},
		{"mpirun without hosts", func(c *Command) { c.Hosts = nil }, "needs hosts or a hostfile"},
		{"bad host", func(c *Command) { c.Hosts = []Host{{Name: "a b"}} }, `bad host name "a b"`},
		{"bad var", func(c *Command) { c.Env = []Var{{"1X", "y"}} }, `bad variable name "1X"`},
		{"bad forward", func(c *Command) { c.Forward = []string{"A=B"} }, `bad variable name "A=B"`},
		{"unknown launcher", func(c *Command) { c.Launcher = "pdsh" }, `unknown launcher "pdsh"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultCommand()
			tt.edit(&c)
			_, err := c.Argv()
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrBadCommand))
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestParseHosts(t *testing.T) {
	h, err := ParseHosts("host1:8,host2:8")
	require.NoError(t, err)
	assert.Equal(t, []Host{{"host1", 8}, {"host2", 8}}, h)
	for _, bad := range []string{"", ",", "a:0", "a:x", ":8"} {
		_, err := ParseHosts(bad)
		assert.ErrorIs(t, err, ErrBadCommand, bad)
	}
}

func FuzzParseHosts(f *testing.F) {
	for _, s := range []string{"host1:8,host2:8", "a", "a:1, b:2 ,", ":", "a:-1", "a:99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hosts, err := ParseHosts(s)
		if err != nil {
			assert.ErrorIs(t, err, ErrBadCommand)
			return
		}
		c := DefaultCommand()
		c.Hosts = hosts
		if _, err := c.Argv(); err != nil {
			assert.ErrorIs(t, err, ErrBadCommand)
		}
		for _, h := range hosts {
			assert.NotEmpty(t, h.Name)
			assert.GreaterOrEqual(t, h.Slots, 0)
		}
	})
}

func TestValidSrunMPI(t *testing.T) {
	for _, ok := range []string{"", "none", "pmi2", "pmix", "pmix_v4", "cray_shasta"} {
		assert.NoError(t, ValidSrunMPI(ok), ok)
	}
	for _, bad := range []string{"pmi", "PMI2", "pmix_v", "pmix_vx", "pmi2 --x", "list"} {
		assert.ErrorIs(t, ValidSrunMPI(bad), ErrBadCommand, bad)
	}
	c := DefaultCommand()
	c.Launcher, c.SrunMPI = LauncherSrun, "openmpi2"
	_, err := c.Argv()
	assert.ErrorIs(t, err, ErrBadCommand)
}
