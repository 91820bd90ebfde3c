package eri

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

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
	// ErrUnknownAction: the endpoint does not know the action
	// (InvalidAction, InvalidAction.NotFound): another endpoint (--endpoint)
	// or API version, not a parameter, is what is wrong.
	ErrUnknownAction = errors.New("the ECS endpoint does not know this action: check --endpoint (or $ALIBABA_CLOUD_ECS_ENDPOINT) names an ECS endpoint")
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
	// ErrUnavailable: the ECS endpoint gave no usable answer (no answer in
	// time, not reachable, an HTTP 5xx, a body that is not the API's JSON
	// or too large): the command could not run, rather than the cloud
	// refusing it.
	ErrUnavailable = errors.New("the ECS endpoint gave no usable answer: check the endpoint and the way " +
		"to it (--endpoint, proxy settings), then run again")
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
	if e.Code == "" {
		msg = fmt.Sprintf("%s: %s", e.Action, serverText(e.Message))
	}
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
	case strings.HasPrefix(c, "incorrectinstancestatus"):
		return ErrNeedsStopped
	case strings.HasPrefix(c, "operationdenied"):
		return ErrInvalidParameter
	case strings.HasPrefix(c, "invalidaction") || strings.HasPrefix(c, "unsupportedoperation"):
		return ErrUnknownAction
	case strings.HasPrefix(c, "forbidden") || strings.HasPrefix(c, "nopermission") ||
		strings.Contains(c, "unauthorized") || c == "invalidaccesskeyid.notfound" ||
		c == "signaturedoesnotmatch" || status == 403:
		return ErrForbidden
	case strings.Contains(c, "quota") || strings.Contains(c, "exceed") || strings.Contains(c, "limitexceeded"):
		return ErrQuota
	case strings.HasPrefix(c, "invalid") || strings.HasPrefix(c, "missing") || status == 400:
		return ErrInvalidParameter
	case status >= 500 || c == "serviceunavailable" || strings.HasPrefix(c, "internalerror"):
		return ErrUnavailable
	}
	return ErrAPI
}

// isTransient reports an answer worth asking again: throttled, or an HTTP
// 5xx answer that arrived whole (not a timeout, not an oversized body).
func isTransient(err error) bool {
	if errors.Is(err, ErrThrottled) {
		return true
	}
	var ae *APIError
	return errors.As(err, &ae) && ae.kind == ErrUnavailable && (ae.HTTPStatus >= 500 ||
		strings.EqualFold(ae.Code, "ServiceUnavailable") || strings.HasPrefix(strings.ToLower(ae.Code), "internalerror"))
}

// apiError turns what the SDK returned into an *APIError (or a
// credentials error) naming the action; ci is what the transport saw of
// the answer, which names the HTTP status and the endpoint when the SDK
// could not read the body.
func apiError(action string, err error, ci *callInfo, timeout time.Duration) error {
	if err == nil {
		return nil
	}
	host, status, statusText, ctype, tooLarge := ci.snapshot()
	if host == "" {
		host = "the ECS endpoint"
	}
	if strings.Contains(err.Error(), "unable to get credentials from any of the providers") ||
		strings.Contains(err.Error(), "InvalidCredentials") {
		return fmt.Errorf("%s: %w (%v)", action, ErrNoCredentials, err)
	}
	switch {
	case tooLarge || errors.Is(err, ErrResponseTooLarge):
		return &APIError{Action: action, HTTPStatus: status, kind: ErrUnavailable,
			Message: fmt.Sprintf("the answer from %s (HTTP %d) is larger than %d MiB: ended there", host, status, MaxResponse>>20)}
	case isTimeout(err):
		what := "no answer"
		if status != 0 {
			what = fmt.Sprintf("HTTP %d, but the body did not end", status)
		}
		return &APIError{Action: action, HTTPStatus: status, kind: ErrUnavailable,
			Message: fmt.Sprintf("%s from %s within %s", what, host, timeout)}
	}
	var sdk *tea.SDKError
	if errors.As(err, &sdk) && (tea.StringValue(sdk.Code) != "" || tea.IntValue(sdk.StatusCode) != 0) {
		code, status := tea.StringValue(sdk.Code), tea.IntValue(sdk.StatusCode)
		msg := tea.StringValue(sdk.Message)
		// The SDK's message repeats code and request id; keep the text after
		// the last "message:" when present.
		if i := strings.LastIndex(msg, "message:"); i >= 0 {
			msg = strings.TrimSpace(msg[i+len("message:"):])
			if j := strings.Index(msg, "\n"); j >= 0 {
				msg = msg[:j]
			}
		}
		// ... or, from the ACS3 path, "code: 400, <Message> request id: <id>".
		if rest, ok := strings.CutPrefix(msg, "code: "); ok {
			if _, after, ok := strings.Cut(rest, ", "); ok {
				msg = after
			}
		}
		if i := strings.LastIndex(msg, " request id: "); i >= 0 {
			msg = msg[:i]
		}
		return &APIError{Action: action, Code: code, Message: clip(msg, 300), HTTPStatus: status, kind: classifyCode(code, status)}
	}
	if status != 0 {
		// An answer came but the SDK could not read it: an HTML error page
		// of a proxy or load balancer, garbage, or JSON of another shape.
		var syn *json.SyntaxError
		kind := ErrUnavailable
		switch {
		case status >= 400:
			// Not the API's answer (a proxy's or load balancer's page): even
			// a 403 says nothing of RAM permissions.
			return &APIError{Action: action, HTTPStatus: status, kind: kind,
				Message: fmt.Sprintf("HTTP %d %s from %s (%s, not the API's JSON)", status, statusText, host, bodyKind(ctype))}
		case errors.As(err, &syn) || errors.Is(err, io.ErrUnexpectedEOF) || ctype != "" && !strings.Contains(ctype, "json"):
			return &APIError{Action: action, HTTPStatus: status, kind: kind,
				Message: fmt.Sprintf("the answer from %s (HTTP %d, %s) is not the API's JSON", host, status, bodyKind(ctype))}
		default:
			return &APIError{Action: action, HTTPStatus: status, kind: kind,
				Message: fmt.Sprintf("the answer from %s is not in the documented shape: %s", host, shapeError(err))}
		}
	}
	return &APIError{Action: action, kind: ErrUnavailable, Message: fmt.Sprintf("%s: %s", host, clip(err.Error(), 200))}
}

func bodyKind(ctype string) string {
	if ctype == "" {
		return "no content type"
	}
	return ctype
}

// shapeError says briefly what a decoding error of the SDK (json-iterator's
// long type path) expected: "field Body.InstanceTypes.InstanceType: a list
// expected, a string found".
func shapeError(err error) string {
	s := err.Error()
	var fields []string
	for _, part := range strings.Split(s, ": ") {
		if strings.HasPrefix(part, "client.") && len(fields) < 8 {
			fields = append(fields, part[strings.LastIndex(part, ".")+1:])
		}
	}
	if len(fields) == 0 {
		return clip(s, 120)
	}
	out := "field " + strings.Join(fields, ".")
	if i := strings.Index(s, "expect "); i >= 0 && i+7 < len(s) {
		want := jsonKind(s[i+7])
		if k := strings.Index(s[i:], "but found "); k >= 0 && i+k+10 < len(s) {
			return out + ": " + want + " expected, " + jsonKind(s[i+k+10]) + " found"
		}
		return out + ": " + want + " expected"
	}
	return out
}

func jsonKind(c byte) string {
	switch {
	case c == '[':
		return "a list"
	case c == '{':
		return "an object"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == '-' || c >= '0' && c <= '9':
		return "a number"
	}
	return "something else"
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
		"ecs:DetachNetworkInterface",
		"ecs:DescribeInstanceAttribute",
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
