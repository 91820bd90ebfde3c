package erdma

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// archiveOf writes a .tar.gz of n entries made by entry(i) (a header and
// its body) and returns its path.
func archiveOf(t testing.TB, n int, entry func(i int) (*tar.Header, []byte)) string {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	require.NoError(t, err)
	tw := tar.NewWriter(zw)
	for i := 0; i < n; i++ {
		h, body := entry(i)
		h.Size = int64(len(body))
		if h.Typeflag == tar.TypeChar {
			h.Size = 0
		}
		require.NoError(t, tw.WriteHeader(h))
		if len(body) > 0 && h.Size > 0 {
			_, err := tw.Write(body)
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	p := filepath.Join(t.TempDir(), "a.tar.gz")
	require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
	return p
}

// openArchive is OpenHost with TMPDIR pointed at a fresh directory, and
// reports whether the temporary directory was removed.
func openArchive(t *testing.T, ctx context.Context, p string) (time.Duration, bool, error) {
	t.Helper()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	start := time.Now()
	_, c, err := OpenHost(ctx, p)
	took := time.Since(start)
	c.Close()
	left, _ := os.ReadDir(tmp)
	return took, len(left) == 0, err
}

// TestUnpackBoundsHeaders: issue 27 item 25. 50,000 entries each with a
// 1 MiB PAX header took 247 s (Go's reader allows 1 MiB per header); now a
// header over 64 KiB is refused at the first entry, naming it.
func TestUnpackBoundsHeaders(t *testing.T) {
	p := archiveOf(t, 200, func(i int) (*tar.Header, []byte) {
		return &tar.Header{Typeflag: tar.TypeReg, Name: "f" + strconv.Itoa(i), Mode: 0o644,
			PAXRecords: map[string]string{"comment": strings.Repeat("x", 900<<10)}}, []byte("x")
	})
	_, clean, err := openArchive(t, context.Background(), p)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrMalformed)
	assert.Contains(t, err.Error(), `entry "f0":`)
	assert.Contains(t, err.Error(), "bytes of headers")
	assert.True(t, clean)
}

// TestUnpackBoundsPathDepth: item 25. 2,000 files at depth 9,990 were
// still unpacking after 280 s; a path deeper than 64 components is refused.
func TestUnpackBoundsPathDepth(t *testing.T) {
	deep := strings.Repeat("d/", 200) + "f"
	p := archiveOf(t, 1, func(int) (*tar.Header, []byte) {
		return &tar.Header{Typeflag: tar.TypeReg, Name: deep, Mode: 0o644}, []byte("x")
	})
	_, clean, err := openArchive(t, context.Background(), p)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrMalformed)
	assert.Contains(t, err.Error(), "201 levels deep, more than 64")
	assert.True(t, clean)

	// A real recording's deepest paths are far below the bound.
	ok := archiveOf(t, 1, func(int) (*tar.Header, []byte) {
		return &tar.Header{Typeflag: tar.TypeReg, Name: strings.Repeat("d/", 40) + "f", Mode: 0o644}, []byte("x")
	})
	_, _, err = openArchive(t, context.Background(), ok)
	assert.NoError(t, err)
}

// TestUnpackBoundsSkippedData: item 25. An entry that is skipped (a type
// unknown to erdmakit) may still claim gigabytes of data that Next would
// decompress to skip; every entry's data is charged to the byte budget, and the decompressed
// stream as a whole is bounded.
func TestUnpackBoundsSkippedData(t *testing.T) {
	p := archiveOf(t, 3, func(i int) (*tar.Header, []byte) {
		return &tar.Header{Typeflag: 'Z', Name: "p" + strconv.Itoa(i), Mode: 0o644}, make([]byte, 2<<20)
	})
	lim := defaultUnpackLimits()
	lim.bytes = 4 << 20
	err := unpack(context.Background(), p, t.TempDir(), lim)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrMalformed)
	assert.Contains(t, err.Error(), "more than 4194304 bytes")
}

// TestUnpackBoundsTime: item 25, the whole unpacking is bounded in time (60 s
// by default); past it the archive is refused as malformed.
func TestUnpackBoundsTime(t *testing.T) {
	p := archiveOf(t, 20000, func(i int) (*tar.Header, []byte) {
		return &tar.Header{Typeflag: tar.TypeReg, Name: "d" + strconv.Itoa(i/500) + "/f" + strconv.Itoa(i), Mode: 0o644}, []byte("x")
	})
	lim := defaultUnpackLimits()
	lim.time = time.Millisecond
	start := time.Now()
	err := unpack(context.Background(), p, t.TempDir(), lim)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrMalformed)
	assert.ErrorIs(t, err, errUnpackTime)
	assert.Contains(t, err.Error(), "more than 1ms")
	assert.Less(t, time.Since(start), 5*time.Second)
}

// TestUnpackHonoursContext: items 3 and 25. Unpacking a 100,000-entry
// archive ignored SIGINT/SIGTERM until its end (3-16 s); the context is now
// checked between entries and in every read: it returns the context's error
// at once, with what was unpacked removed.
func TestUnpackHonoursContext(t *testing.T) {
	p := archiveOf(t, 100000, func(i int) (*tar.Header, []byte) {
		return &tar.Header{Typeflag: tar.TypeReg, Name: "d" + strconv.Itoa(i/1000) + "/f" + strconv.Itoa(i), Mode: 0o644}, []byte("x")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	took, clean, err := openArchive(t, ctx, p)
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	assert.NotErrorIs(t, err, ErrMalformed, "the caller's cancellation is not the archive's fault")
	assert.Less(t, took, 3*time.Second, "returns soon after the context ends, removal included")
	assert.True(t, clean, "the temporary directory is removed")
}

// TestUnpackHardLinks: item 9. A hard link pointing outside the root was
// silently dropped; it is refused, naming the entry, as symlinks are. One
// inside is kept.
func TestUnpackHardLinks(t *testing.T) {
	for _, target := range []string{"../../etc/passwd", "/etc/passwd", "sys/../../x"} {
		p := archiveOf(t, 2, func(i int) (*tar.Header, []byte) {
			if i == 0 {
				return &tar.Header{Typeflag: tar.TypeReg, Name: "sys/a", Mode: 0o644}, []byte("a\n")
			}
			return &tar.Header{Typeflag: tar.TypeLink, Name: "sys/evil", Linkname: target}, nil
		})
		_, clean, err := openArchive(t, context.Background(), p)
		require.Error(t, err, target)
		assert.ErrorIs(t, err, ErrMalformed)
		assert.Contains(t, err.Error(), `hard link "sys/evil" -> "`+target+`" leaves the archive root`)
		assert.True(t, clean)
	}
	p := archiveOf(t, 2, func(i int) (*tar.Header, []byte) {
		if i == 0 {
			return &tar.Header{Typeflag: tar.TypeReg, Name: "sys/a", Mode: 0o644}, []byte("a\n")
		}
		return &tar.Header{Typeflag: tar.TypeLink, Name: "sys/b", Linkname: "sys/a"}, nil
	})
	h, c, err := OpenHost(t.Context(), p)
	require.NoError(t, err)
	defer c.Close()
	b, err := h.ReadFile(t.Context(), "sys/b")
	require.NoError(t, err)
	assert.Equal(t, "a\n", string(b))
}
