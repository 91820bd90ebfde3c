package eri

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
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
	// ${1} keeps a named parameter's "Name=" and is empty for a bare token.
	return safetext.Line(credentialEcho.ReplaceAllString(s, "${1}<redacted>"))
}

// RedactView replaces what identifies the account and the instance in a
// view with r (the recording's Redactor, so MACs and IPv4 addresses map as
// in the rest of the recording): ENI, vSwitch and security-group ids get
// eni-/vsw-/sg-redactedN, the instance id and region as elsewhere, tag
// values other than erdmakit's own and Terway's become "redacted". What
// the checks need stays: types, traffic modes, statuses, network-card and
// device indexes, queue pairs, the type's facts, so a redacted recording
// still shows the channel layout.
func RedactView(r *erdma.Redactor, v *View) *View {
	out := *v
	ids := map[string]string{}
	id := func(prefix, s string) string {
		if s == "" {
			return s
		}
		if m, ok := ids[s]; ok {
			return m
		}
		n := 1
		for _, m := range ids {
			if strings.HasPrefix(m, prefix+"-redacted") {
				n++
			}
		}
		m := fmt.Sprintf("%s-redacted%d", prefix, n)
		ids[s] = m
		return m
	}
	out.Target.InstanceID = r.InstanceID(v.Target.InstanceID)
	if out.Target.Region != "" {
		out.Target.Region = erdma.RedactedRegion
	}
	out.ENIs = make([]ENI, len(v.ENIs))
	for i, e := range v.ENIs {
		e.ID = id("eni", e.ID)
		e.MAC = r.MAC(e.MAC)
		e.IP = r.IPv4(e.IP)
		e.InstanceID = r.InstanceID(e.InstanceID)
		e.VSwitchID = id("vsw", e.VSwitchID)
		sgs := make([]string, len(e.SecurityGroupIDs))
		for j, g := range e.SecurityGroupIDs {
			sgs[j] = id("sg", g)
		}
		e.SecurityGroupIDs = sgs
		if e.Tags != nil {
			tags := map[string]string{}
			for k, val := range e.Tags {
				switch k {
				case TagInstance:
					val = r.InstanceID(val)
				case TagCreator, TagTerwayExcluded:
				default:
					val = "redacted"
				}
				tags[k] = val
			}
			e.Tags = tags
		}
		out.ENIs[i] = e
	}
	return &out
}

// RedactViewFile is RedactView for the recorded file (ViewFile), as
// erdma.RecordOptions.FileRedactors takes it.
func RedactViewFile(r *erdma.Redactor, data []byte) ([]byte, error) {
	var v View
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("cloud view: %w", err)
	}
	return MarshalView(RedactView(r, &v))
}
