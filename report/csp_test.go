package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The page's CSP allows its one inline script by hash, never
// 'unsafe-inline' for scripts (report-2 item 2): the hash in the policy is
// the SHA-256 of the script's text as the page carries it.
func TestCSPHashesTheOneScript(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, Write(&b, Options{}, fileInputs(t)...))
	page := b.String()
	m := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy" content="([^"]*)">`).FindStringSubmatch(page)
	require.Len(t, m, 2, "the page has a CSP")
	csp := html.UnescapeString(m[1])
	var scriptSrc string
	for _, d := range strings.Split(csp, ";") {
		if f := strings.Fields(d); len(f) > 0 && f[0] == "script-src" {
			scriptSrc = strings.Join(f[1:], " ")
		}
	}
	assert.NotContains(t, scriptSrc, "unsafe-inline")
	scripts := regexp.MustCompile(`(?s)<script>(.*?)</script>`).FindAllStringSubmatch(page, -1)
	require.Len(t, scripts, 1, "one inline script")
	sum := sha256.Sum256([]byte(scripts[0][1]))
	assert.Equal(t, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'", scriptSrc)
	assert.Contains(t, csp, "default-src 'none'")
}
