// Command gpugen adds the GPU parts to the recorded-host fixtures
// testdata/hosts/<name>.tar.gz (see package gpugen). Run it from the
// repository root after internal/hostgen:
//
//	go run ./nvml/internal/gpugen/cmd/gpugen [-out testdata/hosts]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/erdmakit/erdmakit/nvml/internal/gpugen"
)

func main() {
	out := flag.String("out", fixture.Dir, "directory holding one <name>.tar.gz per host")
	flag.Parse()
	for _, s := range gpugen.Fixtures() {
		archive := filepath.Join(*out, s.Host+".tar.gz")
		if _, err := os.Stat(archive); err != nil {
			fmt.Fprintln(os.Stderr, "gpugen: run internal/hostgen/cmd/hostgen first:", err)
			os.Exit(1)
		}
		if err := fixture.Update(archive, func(dir string) error { return gpugen.Write(dir, s) }); err != nil {
			fmt.Fprintln(os.Stderr, "gpugen:", err)
			os.Exit(1)
		}
		fmt.Println("wrote", archive)
	}
}
