package nccl_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/erdmakit/erdmakit/nccl"
)

// A host with two eRDMA NICs and two GPUs: each NIC gets a channel with
// both GPUs, in the XML NCCL_GRAPH_FILE names.
func ExampleMultiNICGraph() {
	g, err := nccl.MultiNICGraph(nccl.GraphPlan{GPUs: []int{0, 1}, NICs: []string{"erdma_0", "erdma_1"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	var b strings.Builder
	_, _ = g.WriteTo(&b)
	fmt.Print(strings.Join(strings.Split(b.String(), "\n")[:13], "\n"))
	// Output:
	// <graphs version="1">
	//   <graph id="0" pattern="4" crossnic="0" nchannels="2" speedintra="12" speedinter="12" latencyinter="0" typeintra="SYS" typeinter="SYS" samechannels="1">
	//     <channel>
	//       <net dev="0"/>
	//       <gpu dev="0"/> <gpu dev="0x1"/>
	//       <net dev="0"/>
	//     </channel>
	//     <channel>
	//       <net dev="0x1"/>
	//       <gpu dev="0"/> <gpu dev="0x1"/>
	//       <net dev="0x1"/>
	//     </channel>
	//   </graph>
}

// Reading a graph file, here the erdma-controller runbook's.
func ExampleParseGraph() {
	f, err := os.Open("testdata/graph/runbook-nccl-graph.xml")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	g, err := nccl.ParseGraph(context.Background(), f)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d graphs, %d GPUs per channel, net devs %v\n", len(g.Graphs), g.GPUCount(), g.NetDevs())
	// Output: 5 graphs, 8 GPUs per channel, net devs [0 1]
}
