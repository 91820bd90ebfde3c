package eri

import (
	"regexp"

	"github.com/erdmakit/erdmakit/internal/safetext"
)

// credentialEcho matches what an API error text may echo back of the
// request's credentials: a named credential parameter or header with its
// value, an AccessKey id (LTAI...), an STS AccessKey id (STS....) or an STS
// security token (CAIS...).
var credentialEcho = regexp.MustCompile(
	`(?i)((?:AccessKeyId|AccessKeySecret|SecurityToken|Signature|x-acs-security-token|x-acs-accesskey-id|x-acs-signature-[a-z]+|Authorization)"?\s*[=:]\s*"?)[^\s"&,;]+` +
		`|\bLTAI[0-9A-Za-z]{8,}|\bSTS\.[0-9A-Za-z]{8,}|\bCAIS[0-9A-Za-z+/=]{16,}`)

// serverText makes text an ECS endpoint sent safe to print: credential
// echoes replaced by <redacted>, control characters escaped, one line.
func serverText(s string) string {
	s = credentialEcho.ReplaceAllStringFunc(s, func(m string) string {
		if sub := credentialEcho.FindStringSubmatch(m); sub[1] != "" {
			return sub[1] + "<redacted>"
		}
		return "<redacted>"
	})
	return safetext.Line(s)
}
