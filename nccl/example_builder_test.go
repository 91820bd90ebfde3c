package nccl_test

import (
	"fmt"

	"github.com/erdmakit/erdmakit/nccl"
)

func ExampleDefaultCommand() {
	fmt.Println(nccl.DefaultCommand())
	// Output:
	// mpirun --allow-run-as-root -np 16 -npernode 8 -H host1:8,host2:8 --bind-to none --tag-output -mca btl_tcp_if_include eth0 -mca oob_tcp_if_include eth0 -x NCCL_SOCKET_IFNAME=eth0 -x NCCL_DEBUG=INFO -x LD_LIBRARY_PATH -x PATH ./build/all_reduce_perf -b 4M -e 4M -f 2 -g 1 -t 1 -n 20
}

func ExampleCommand_Argv() {
	c := nccl.DefaultCommand()
	c.Hosts, _ = nccl.ParseHosts("gpu-a:8,gpu-b:8,gpu-c:8,gpu-d:8")
	c.Env = append(c.Env,
		nccl.Var{Name: "NCCL_IB_HCA", Value: "erdma_0"},
		nccl.Var{Name: "NCCL_IB_GID_INDEX", Value: "1"},
		nccl.Var{Name: "NCCL_NET_GDR_LEVEL", Value: "SYS"})
	c.TestArgs = []string{"-b", "8", "-e", "8G", "-f", "2", "-g", "1"}
	argv, err := c.Argv()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(nccl.ShellJoin(argv))
	// Output:
	// mpirun --allow-run-as-root -np 32 -npernode 8 -H gpu-a:8,gpu-b:8,gpu-c:8,gpu-d:8 --bind-to none --tag-output -mca btl_tcp_if_include eth0 -mca oob_tcp_if_include eth0 -x NCCL_SOCKET_IFNAME=eth0 -x NCCL_DEBUG=INFO -x NCCL_IB_HCA=erdma_0 -x NCCL_IB_GID_INDEX=1 -x NCCL_NET_GDR_LEVEL=SYS -x LD_LIBRARY_PATH -x PATH ./build/all_reduce_perf -b 8 -e 8G -f 2 -g 1
}

func ExampleCommand_Argv_srun() {
	c := nccl.DefaultCommand()
	c.Launcher = nccl.LauncherSrun
	c.Env = append(c.Env, nccl.Var{Name: "NCCL_IB_HCA", Value: "erdma_0,erdma_1"})
	argv, _ := c.Argv()
	fmt.Println(nccl.ShellJoin(argv))
	fmt.Println(c.Environ())
	// Output:
	// srun --nodes 2 --ntasks-per-node 8 --mpi=pmix --nodelist host1,host2 --export=ALL,NCCL_SOCKET_IFNAME=eth0,NCCL_DEBUG=INFO ./build/all_reduce_perf -b 4M -e 4M -f 2 -g 1 -t 1 -n 20
	// [NCCL_SOCKET_IFNAME=eth0 NCCL_DEBUG=INFO NCCL_IB_HCA=erdma_0,erdma_1]
}
