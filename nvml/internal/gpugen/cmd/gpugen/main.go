// Command gpugen adds the GPU parts to the recorded-host fixtures under
// testdata/hosts (see package gpugen). Run it from the repository root
// after internal/hostgen:
//
//	go run ./nvml/internal/gpugen/cmd/gpugen [-out testdata/hosts]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/erdmakit/erdmakit/nvml/internal/gpugen"
)

func main() {
	out := flag.String("out", "testdata/hosts", "directory holding one tree per host")
	flag.Parse()
	for _, s := range gpugen.Fixtures() {
		dir := filepath.Join(*out, s.Host)
		if _, err := os.Stat(dir); err != nil {
			fmt.Fprintln(os.Stderr, "gpugen:", err)
			os.Exit(1)
		}
		if err := gpugen.Write(dir, s); err != nil {
			fmt.Fprintln(os.Stderr, "gpugen:", err)
			os.Exit(1)
		}
		fmt.Println("wrote", dir)
	}
}
