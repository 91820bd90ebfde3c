package frame_test

import (
	"bytes"
	"fmt"

	"github.com/erdmakit/erdmakit/internal/frame"
)

// A protocol names its magic, version and payload bound once; Append and
// ReadHeader/ReadPayload do the rest.
func Example() {
	spec := frame.Spec{Magic: [4]byte{'E', 'K', 'X', 'X'}, Version: 1, MaxPayload: 1 << 10}
	b, _ := spec.Append(nil, 3, []byte(`{"rank":1}`))
	r := bytes.NewReader(b)
	h, err := spec.ReadHeader(r)
	fmt.Println(len(b), h.Type, h.Len, err)
	p, _ := frame.ReadPayload(r, h)
	fmt.Println(string(p))
	_, err = spec.ReadHeader(bytes.NewReader([]byte("GET / HTTP/1.1\r\n")))
	fmt.Println(err)
	// Output:
	// 22 3 10 <nil>
	// {"rank":1}
	// bad magic "GET "
}
