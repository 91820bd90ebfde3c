// Command hostgen writes the recorded-host fixtures testdata/hosts/<name>.tar.gz
// from the specs in internal/hostgen. Each archive is unpacked, the files the
// generator owns are rewritten, and it is packed again (the GPU files nvml's
// gpugen adds stay). Run it from the repository root:
//
//	go run ./internal/hostgen/cmd/hostgen [-out testdata/hosts]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/erdmakit/erdmakit/internal/hostgen"
)

func main() {
	out := flag.String("out", fixture.Dir, "directory holding one <name>.tar.gz per host")
	flag.Parse()
	for _, s := range hostgen.Fixtures() {
		archive := filepath.Join(*out, s.Name+".tar.gz")
		if err := fixture.Update(archive, func(dir string) error { return hostgen.Write(dir, s) }); err != nil {
			fmt.Fprintln(os.Stderr, "hostgen:", err)
			os.Exit(1)
		}
		fmt.Println("wrote", archive)
	}
}
