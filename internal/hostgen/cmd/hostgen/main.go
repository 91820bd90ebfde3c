// Command hostgen writes the recorded-host fixtures under testdata/hosts from
// the specs in internal/hostgen. Run it from the repository root:
//
//	go run ./internal/hostgen/cmd/hostgen [-out testdata/hosts]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/erdmakit/erdmakit/internal/hostgen"
)

func main() {
	out := flag.String("out", "testdata/hosts", "directory holding one tree per host")
	flag.Parse()
	for _, s := range hostgen.Fixtures() {
		if err := hostgen.Write(filepath.Join(*out, s.Name), s); err != nil {
			fmt.Fprintln(os.Stderr, "hostgen:", err)
			os.Exit(1)
		}
		fmt.Println("wrote", filepath.Join(*out, s.Name))
	}
}
