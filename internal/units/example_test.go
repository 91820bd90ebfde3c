package units_test

import (
	"fmt"

	"github.com/erdmakit/erdmakit/internal/units"
)

func ExampleFormat() {
	fmt.Println(units.Format(65536, units.Label), units.Format(65536, units.Compact), units.Format(65536, units.Text))
	fmt.Println(units.Format(1000, units.Compact))
	// Output:
	// 64K 64KiB 64 KiB
	// 1000B
}

func ExampleParse() {
	n, err := units.Parse("64K", 1<<30)
	fmt.Println(n, err)
	_, err = units.Parse("2G", 1<<30)
	fmt.Println(err)
	// Output:
	// 65536 <nil>
	// size "2G": want a byte count like 65536, 64K or 1M (at most 1G)
}
