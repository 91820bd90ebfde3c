package eri

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/alibabacloud-go/tea/tea"
)

// Errors users hit, comparable with errors.Is. Each message says what to do.
var (
	// ErrNoCredentials: no credential source of the default chain answered.
	ErrNoCredentials = errors.New("no Alibaba Cloud credentials: set ALIBABA_CLOUD_ACCESS_KEY_ID and " +
		"ALIBABA_CLOUD_ACCESS_KEY_SECRET, or configure the aliyun CLI (aliyun configure), or attach a RAM role " +
		"to the instance (ECS console: Instance > Bind RAM role), or run in ACK with RRSA (ALIBABA_CLOUD_OIDC_*)")
	// ErrForbidden: the credentials lack a RAM permission (Forbidden.RAM,
	// NoPermission). PolicyJSON lists what erdmakit needs.
	ErrForbidden = errors.New("missing RAM permission: grant the policy printed by 'erdmakit eri policy'")
	// ErrThrottled: the API kept throttling after the bounded retries.
	ErrThrottled = errors.New("throttled by the ECS API after retries: wait a minute and run again")
	// ErrQuota: an ENI/ERI quota or the type's EriQuantity would be exceeded.
	ErrQuota = errors.New("quota exceeded: the instance type or the account allows no more ERIs/ENIs")
	// ErrInvalidParameter: the API refused a parameter.
	ErrInvalidParameter = errors.New("the ECS API refused a parameter")
	// ErrNotSupported: the instance type has no ERI (EriQuantity 0).
	ErrNotSupported = errors.New("the instance type does not support eRDMA interfaces (EriQuantity 0): " +
		"use an ERI-capable GPU type (ebmgn7ex, ebmgn8is, gn8is, ebmgn9g...)")
	// ErrAttachTimeout: an attached ENI did not reach InUse in time.
	ErrAttachTimeout = errors.New("ENI did not reach InUse in time: check it in the ECS console " +
		"(Network Interfaces) and run the command again")
	// ErrNotOnECS: neither flags nor the metadata service named the instance.
	ErrNotOnECS = errors.New("not on an ECS instance (the metadata service did not answer): " +
		"name the instance (Target: instance id, region and type)")
	// ErrChannel: no free network-card channel is left for another ERI
	// (two ERIs on one channel halve the total bandwidth).
	ErrChannel = errors.New("no free network-card channel (NetworkCardIndex) for another ERI")
	// ErrAPI: any other error answer of the API.
	ErrAPI = errors.New("ECS API error")
)

// APIError is an error answer of the ECS API, classified.
type APIError struct {
	Action     string // "AttachNetworkInterface"
	Code       string // "Forbidden.RAM"
	Message    string
	HTTPStatus int
	kind       error
}

func (e *APIError) Error() string {
	// Code and Message are the server's words: printed without credential
	// echoes and control characters (a hostile endpoint's text is not ours).
	msg := fmt.Sprintf("%s: %s (HTTP %d): %s", e.Action, serverText(e.Code), e.HTTPStatus, serverText(e.Message))
	if e.kind == ErrForbidden {
		msg += "; the actions erdmakit needs:\n" + PolicyJSON()
	}
	return msg + ": " + e.kind.Error()
}

// Unwrap makes errors.Is(err, ErrForbidden) and the others work.
func (e *APIError) Unwrap() error { return e.kind }

// classifyCode maps an ECS error code to one of the sentinel errors.
func classifyCode(code string, status int) error {
	c := strings.ToLower(code)
	switch {
	case strings.HasPrefix(c, "throttling") || c == "servicebusy" || status == 429:
		return ErrThrottled
	case strings.HasPrefix(c, "forbidden") || strings.HasPrefix(c, "nopermission") ||
		strings.Contains(c, "unauthorized") || c == "invalidaccesskeyid.notfound" ||
		c == "signaturedoesnotmatch" || status == 403:
		return ErrForbidden
	case strings.Contains(c, "quota") || strings.Contains(c, "exceed") || strings.Contains(c, "limitexceeded"):
		return ErrQuota
	case strings.HasPrefix(c, "invalid") || strings.HasPrefix(c, "missing") || status == 400:
		return ErrInvalidParameter
	}
	return ErrAPI
}

// apiError turns what the SDK returned into an *APIError (or a
// credentials error) naming the action.
func apiError(action string, err error) error {
	if err == nil {
		return nil
	}
	if strings.Contains(err.Error(), "unable to get credentials from any of the providers") ||
		strings.Contains(err.Error(), "InvalidCredentials") {
		return fmt.Errorf("%s: %w (%v)", action, ErrNoCredentials, err)
	}
	var sdk *tea.SDKError
	if errors.As(err, &sdk) {
		code, status := tea.StringValue(sdk.Code), tea.IntValue(sdk.StatusCode)
		if code == "" && status == 0 {
			return fmt.Errorf("%s: %w: %w", action, ErrAPI, err)
		}
		msg := tea.StringValue(sdk.Message)
		// The SDK's message repeats code and request id; keep the text after
		// the last "message:" when present.
		if i := strings.LastIndex(msg, "message:"); i >= 0 {
			msg = strings.TrimSpace(msg[i+len("message:"):])
			if j := strings.Index(msg, "\n"); j >= 0 {
				msg = msg[:j]
			}
		}
		return &APIError{Action: action, Code: code, Message: clip(msg, 300), HTTPStatus: status, kind: classifyCode(code, status)}
	}
	return fmt.Errorf("%s: %w: %w", action, ErrAPI, err)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Actions are the RAM actions erdmakit's eri commands and the doctor call.
func Actions() []string {
	return []string{
		"ecs:DescribeInstanceTypes",
		"ecs:DescribeNetworkInterfaces",
		"ecs:CreateNetworkInterface",
		"ecs:AttachNetworkInterface",
		"ecs:ModifyNetworkInterfaceAttribute",
		"ecs:TagResources",
	}
}

// PolicyJSON is a RAM custom policy granting Actions, ready to paste into
// the RAM console. Read-only use (status, doctor) needs only the Describe
// actions.
func PolicyJSON() string {
	p := map[string]any{
		"Version": "1",
		"Statement": []map[string]any{{
			"Effect":   "Allow",
			"Action":   Actions(),
			"Resource": "*",
		}},
	}
	b, _ := json.MarshalIndent(p, "", "  ")
	return string(b)
}
