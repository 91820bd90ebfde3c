package frame

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var spec = Spec{Magic: [4]byte{'E', 'K', 'T', 'T'}, Version: 3, MaxPayload: 64}

func TestRoundTrip(t *testing.T) {
	b, err := spec.Append([]byte("prefix"), 7, []byte("hello"))
	require.NoError(t, err)
	assert.Equal(t, "prefix", string(b[:6]))
	assert.Equal(t, []byte{'E', 'K', 'T', 'T', 0, 3, 7, 0, 0, 0, 0, 5}, b[6:6+HeaderLen])
	r := bytes.NewReader(b[6:])
	h, err := spec.ReadHeader(r)
	require.NoError(t, err)
	assert.Equal(t, Header{Type: 7, Len: 5}, h)
	p, err := ReadPayload(r, h)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(p))
}

func TestEndRejectsLargePayload(t *testing.T) {
	b, err := spec.Append([]byte("x"), 1, make([]byte, 65))
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Equal(t, "x", string(b), "the frame is dropped, what was before it kept")
	_, err = spec.End([]byte("short"), 0)
	require.Error(t, err)
}

func TestReadErrors(t *testing.T) {
	good, err := spec.Append(nil, 2, []byte("abc"))
	require.NoError(t, err)
	mutate := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return b
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, io.EOF},
		{"cut header", good[:7], io.ErrUnexpectedEOF},
		{"http", []byte("GET / HTTP/1.1\r\n\r\n"), ErrBadMagic},
		{"other version", mutate(func(b []byte) { b[5] = 4 }), ErrVersion},
		{"too large", mutate(func(b []byte) { binary.BigEndian.PutUint32(b[8:], 65) }), ErrTooLarge},
		{"cut payload", good[:len(good)-1], io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := bytes.NewReader(tc.in)
			h, err := spec.ReadHeader(r)
			if err == nil {
				_, err = ReadPayload(r, h)
			}
			assert.ErrorIs(t, err, tc.want)
		})
	}
}

func FuzzReadHeader(f *testing.F) {
	good, _ := spec.Append(nil, 2, []byte("abc"))
	f.Add(good)
	f.Add([]byte("EKTT\x00\x03\x01\x00\xff\xff\xff\xff"))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		h, err := spec.ReadHeader(r)
		if err != nil {
			return
		}
		require.LessOrEqual(t, h.Len, spec.MaxPayload)
		p, err := ReadPayload(r, h)
		if err != nil {
			return
		}
		// What decodes re-encodes to the same bytes (the reserved byte aside).
		out, err := spec.Append(nil, h.Type, p)
		require.NoError(t, err)
		want := append([]byte(nil), b[:len(out)]...)
		want[7] = 0
		assert.Equal(t, want, out)
	})
}
