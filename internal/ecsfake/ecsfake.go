// Package ecsfake is a local ECS OpenAPI endpoint for tests: it checks each
// request the official SDK signs (ACS3-HMAC-SHA256, x-acs-action,
// x-acs-version 2014-05-26, parameters in the query) and answers with
// bodies shaped as the API documents, including error bodies.
package ecsfake

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Version is the only API version the fake accepts.
const Version = "2014-05-26"

// Type is one instance type's entry in DescribeInstanceTypes.
type Type struct {
	ID          string
	EriQuantity int
	Cards       []int
	GPUAmount   int
	GPUSpec     string
	BandwidthRx int
	QPs         int
}

// ENI is one network interface the fake holds.
type ENI struct {
	ID, MAC, Type, Mode, IP, Status, InstanceID, VSwitchID string
	SecurityGroups                                         []string
	CardIndex, DeviceIndex                                 int
	QueuePairNumber                                        int
	Tags                                                   map[string]string
	describesToInUse                                       int
}

// Instance is what DescribeInstanceAttribute says of an instance; an
// instance the fake does not hold is Running without jumbo frames.
type Instance struct {
	Status     string // "Running", "Stopped"
	JumboFrame bool
}

// Fault is an error answer injected for an action, Times times (0: always).
type Fault struct {
	Code   string
	Status int
	Times  int
	// Message replaces the code's usual message text (a hostile server's).
	Message string
}

// Request is one request the fake received and accepted as signed.
type Request struct {
	Action string
	Params url.Values
}

// Server is the fake ECS endpoint. Use it as an http.Handler
// (httptest.NewServer). Fields are safe to set before the first request;
// use the methods afterwards.
type Server struct {
	AccessKeyID, AccessKeySecret string
	// SecurityToken, when set, must come in x-acs-security-token (STS
	// credentials from the RAM role).
	SecurityToken string
	Types         map[string]Type
	// AttachDescribes is how many describes an attached ENI stays Attaching.
	AttachDescribes int
	// Instances holds instance states by id (DescribeInstanceAttribute,
	// and DetachNetworkInterface of an ERI, which needs it Stopped).
	Instances map[string]Instance
	// ApplyThenFail makes the next injected fault of an action answer
	// after the action took effect (a 503 whose attach happened anyway).
	ApplyThenFail bool
	// IgnoreStatusFilter answers DescribeNetworkInterfaces as if its
	// Status parameter were absent (a server the client must not trust).
	IgnoreStatusFilter bool

	mu       sync.Mutex
	enis     []*ENI
	faults   map[string][]Fault
	requests []Request
	tokens   map[string]string // ClientToken -> ENI id
	nextID   int
}

// AddENI adds an ENI (an instance's primary, or one to convert).
func (s *Server) AddENI(e ENI) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cp := e
	s.enis = append(s.enis, &cp)
}

// ENIs returns a copy of the fake's ENIs.
func (s *Server) ENIs() []ENI {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ENI
	for _, e := range s.enis {
		out = append(out, *e)
	}
	return out
}

// Fail injects an error answer for action.
func (s *Server) Fail(action string, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults == nil {
		s.faults = map[string][]Fault{}
	}
	s.faults[action] = append(s.faults[action], f)
}

// Requests returns the accepted requests in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Count returns how many accepted requests had action.
func (s *Server) Count(action string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Action == action {
			n++
		}
	}
	return n
}

func writeErr(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{
		"RequestId": "0C6F3B36-FAKE-4D2A-9D12-000000000000", "HostId": "ecs.aliyuncs.com",
		"Code": code, "Message": msg, "Recommend": "https://api.aliyun.com/troubleshoot?q=" + code,
	})
}

var messages = map[string]string{
	"ServiceUnavailable":                      "The request has failed due to a temporary failure of the server.",
	"IncorrectInstanceStatus":                 "The current status of the resource does not support this operation.",
	"QuotaExceed.PortableNetworkInterface":    "The maximum number of network interfaces is exceeded.",
	"OperationDenied.PrimaryNetworkInterface": "The primary network interface cannot be detached.",
	"Forbidden.RAM":                           "User not authorized to operate on the specified resource, or this API doesn't support RAM.",
	"Throttling.User":                         "Request was denied due to user flow control.",
	"InvalidParameter":                        "The specified parameter is not valid.",
	"QuotaExceed.Eri":                         "The maximum number of ERIs of the instance type is exceeded.",
	"IncompleteSignature":                     "The request signature does not conform to Aliyun standards.",
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	action := r.Header.Get("x-acs-action")
	if v := r.Header.Get("x-acs-version"); v != Version {
		writeErr(w, 400, "InvalidVersion", fmt.Sprintf("version %q, want %s", v, Version))
		return
	}
	if err := s.verify(r); err != nil {
		writeErr(w, 400, "IncompleteSignature", err.Error())
		return
	}
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	if fs := s.faults[action]; len(fs) > 0 {
		f := &fs[0]
		if f.Times > 0 {
			f.Times--
			if f.Times == 0 {
				s.faults[action] = fs[1:]
			}
		}
		msg := messages[f.Code]
		if f.Message != "" {
			msg = f.Message
		}
		if msg == "" {
			msg = "injected"
		}
		if s.ApplyThenFail {
			s.requests = append(s.requests, Request{Action: action, Params: q})
			_, _ = s.do(action, q)
		}
		writeErr(w, f.Status, f.Code, msg)
		return
	}
	s.requests = append(s.requests, Request{Action: action, Params: q})
	body, status := s.do(action, q)
	if status == 404 {
		writeErr(w, 404, "InvalidAction.NotFound", "action "+action)
		return
	}
	if status != 200 {
		writeErr(w, status, body.(string), messages[body.(string)])
		return
	}
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	_ = json.NewEncoder(w).Encode(body)
}

func (s *Server) do(action string, q url.Values) (body any, status int) {
	switch action {
	case "DescribeInstanceTypes":
		body, status = s.describeTypes(q)
	case "DescribeNetworkInterfaces":
		body, status = s.describeENIs(q)
	case "CreateNetworkInterface":
		body, status = s.create(q)
	case "AttachNetworkInterface":
		body, status = s.attach(q)
	case "ModifyNetworkInterfaceAttribute":
		body, status = s.modify(q)
	case "DetachNetworkInterface":
		body, status = s.detach(q)
	case "DescribeInstanceAttribute":
		body, status = s.describeInstance(q)
	default:
		return nil, 404
	}
	return body, status
}

// verify checks the ACS3-HMAC-SHA256 signature with the fake's key.
func (s *Server) verify(r *http.Request) error {
	auth := r.Header.Get("Authorization")
	const alg = "ACS3-HMAC-SHA256 "
	if !strings.HasPrefix(auth, alg) {
		return fmt.Errorf("authorization %q: not %s", auth, strings.TrimSpace(alg))
	}
	parts := map[string]string{}
	for _, p := range strings.Split(strings.TrimPrefix(auth, alg), ",") {
		k, v, _ := strings.Cut(p, "=")
		parts[k] = v
	}
	if parts["Credential"] != s.AccessKeyID {
		return fmt.Errorf("access key %q is not the test's", parts["Credential"])
	}
	if s.SecurityToken != "" && r.Header.Get("x-acs-security-token") != s.SecurityToken {
		return fmt.Errorf("security token missing or wrong")
	}
	signed := strings.Split(parts["SignedHeaders"], ";")
	var ch strings.Builder
	for _, h := range signed {
		v := r.Header.Get(h)
		if h == "host" {
			v = r.Host
		}
		ch.WriteString(h + ":" + strings.TrimSpace(v) + "\n")
	}
	q := r.URL.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var cq []string
	for _, k := range keys {
		v := url.QueryEscape(q.Get(k))
		v = strings.NewReplacer("+", "%20", "*", "%2A", "%7E", "~").Replace(v)
		cq = append(cq, k+"="+v)
	}
	canon := r.Method + "\n/\n" + strings.Join(cq, "&") + "\n" + ch.String() + "\n" +
		parts["SignedHeaders"] + "\n" + r.Header.Get("x-acs-content-sha256")
	sum := sha256.Sum256([]byte(canon))
	mac := hmac.New(sha256.New, []byte(s.AccessKeySecret))
	mac.Write([]byte("ACS3-HMAC-SHA256\n" + hex.EncodeToString(sum[:])))
	if want := hex.EncodeToString(mac.Sum(nil)); !hmac.Equal([]byte(want), []byte(parts["Signature"])) {
		return fmt.Errorf("signature does not match")
	}
	return nil
}

func list(q url.Values, prefix string) []string {
	var out []string
	for i := 1; i <= 100; i++ {
		v := q.Get(prefix + "." + strconv.Itoa(i))
		if v == "" {
			break
		}
		out = append(out, v)
	}
	return out
}

func tags(q url.Values) map[string]string {
	m := map[string]string{}
	for i := 1; i <= 20; i++ {
		k := q.Get("Tag." + strconv.Itoa(i) + ".Key")
		if k == "" {
			break
		}
		m[k] = q.Get("Tag." + strconv.Itoa(i) + ".Value")
	}
	return m
}

func (s *Server) describeTypes(q url.Values) (any, int) {
	var out []map[string]any
	for _, id := range list(q, "InstanceTypes") {
		t, ok := s.Types[id]
		if !ok {
			continue
		}
		var cards []map[string]any
		for _, c := range t.Cards {
			cards = append(cards, map[string]any{"NetworkCardIndex": c})
		}
		out = append(out, map[string]any{
			"InstanceTypeId": t.ID, "EriQuantity": t.EriQuantity, "NetworkCardQuantity": len(t.Cards),
			"NetworkCards": map[string]any{"NetworkCardInfo": cards}, "GPUAmount": t.GPUAmount, "GPUSpec": t.GPUSpec,
			"InstanceBandwidthRx": t.BandwidthRx, "InstanceBandwidthTx": t.BandwidthRx, "QueuePairNumber": t.QPs,
			"EniQuantity": 32, "InstanceTypeFamily": "ecs." + strings.Split(t.ID, ".")[1],
		})
	}
	return map[string]any{"RequestId": "R1", "NextToken": "", "InstanceTypes": map[string]any{"InstanceType": out}}, 200
}

func (s *Server) describeENIs(q url.Values) (any, int) {
	ids := list(q, "NetworkInterfaceId")
	tg := tags(q)
	var out []map[string]any
	for _, e := range s.enis {
		if iid := q.Get("InstanceId"); iid != "" && e.InstanceID != iid {
			continue
		}
		if st := q.Get("Status"); st != "" && e.Status != st && !s.IgnoreStatusFilter {
			continue
		}
		if len(ids) > 0 && !contains(ids, e.ID) {
			continue
		}
		match := true
		for k, v := range tg {
			if e.Tags[k] != v {
				match = false
			}
		}
		if !match {
			continue
		}
		if e.Status == "Attaching" {
			if e.describesToInUse <= 0 {
				e.Status = "InUse"
			} else {
				e.describesToInUse--
			}
		}
		var tl []map[string]string
		for k, v := range e.Tags {
			tl = append(tl, map[string]string{"TagKey": k, "TagValue": v})
		}
		m := map[string]any{
			"NetworkInterfaceId": e.ID, "MacAddress": e.MAC, "Type": e.Type, "NetworkInterfaceTrafficMode": e.Mode,
			"PrivateIpAddress": e.IP, "Status": e.Status, "VSwitchId": e.VSwitchID, "VpcId": "vpc-fake",
			"SecurityGroupIds": map[string]any{"SecurityGroupId": e.SecurityGroups},
			"Tags":             map[string]any{"Tag": tl}, "QueuePairNumber": e.QueuePairNumber,
		}
		if e.InstanceID != "" {
			m["InstanceId"] = e.InstanceID
			m["Attachment"] = map[string]any{"InstanceId": e.InstanceID, "NetworkCardIndex": e.CardIndex, "DeviceIndex": e.DeviceIndex}
		}
		out = append(out, m)
	}
	return map[string]any{"RequestId": "R2", "TotalCount": len(out), "NextToken": "",
		"NetworkInterfaceSets": map[string]any{"NetworkInterfaceSet": out}}, 200
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func (s *Server) create(q url.Values) (any, int) {
	if q.Get("VSwitchId") == "" || len(list(q, "SecurityGroupIds")) == 0 {
		return "InvalidParameter", 400
	}
	if tok := q.Get("ClientToken"); tok != "" {
		if id, ok := s.tokens[tok]; ok {
			return map[string]any{"RequestId": "R3", "NetworkInterfaceId": id}, 200
		}
	}
	s.nextID++
	e := &ENI{ID: fmt.Sprintf("eni-fake%04d", s.nextID), MAC: fmt.Sprintf("00:16:3e:aa:00:%02x", s.nextID),
		Type: "Secondary", Mode: q.Get("NetworkInterfaceTrafficMode"), IP: fmt.Sprintf("10.0.1.%d", 10+s.nextID),
		Status: "Available", VSwitchID: q.Get("VSwitchId"), SecurityGroups: list(q, "SecurityGroupIds"), Tags: tags(q)}
	e.QueuePairNumber, _ = strconv.Atoi(q.Get("QueuePairNumber"))
	if e.Mode == "" {
		e.Mode = "Standard"
	}
	s.enis = append(s.enis, e)
	if tok := q.Get("ClientToken"); tok != "" {
		if s.tokens == nil {
			s.tokens = map[string]string{}
		}
		s.tokens[tok] = e.ID
	}
	return map[string]any{"RequestId": "R3", "NetworkInterfaceId": e.ID, "MacAddress": e.MAC, "Status": e.Status}, 200
}

func (s *Server) find(id string) *ENI {
	for _, e := range s.enis {
		if e.ID == id {
			return e
		}
	}
	return nil
}

func (s *Server) attach(q url.Values) (any, int) {
	e := s.find(q.Get("NetworkInterfaceId"))
	if e == nil || q.Get("InstanceId") == "" {
		return "InvalidParameter", 400
	}
	ci, err := strconv.Atoi(q.Get("NetworkCardIndex"))
	if err != nil {
		ci = 0
	}
	n := 0
	for _, o := range s.enis {
		if o.InstanceID == q.Get("InstanceId") {
			n++
		}
	}
	e.InstanceID, e.CardIndex, e.DeviceIndex = q.Get("InstanceId"), ci, n
	e.Status, e.describesToInUse = "Attaching", s.AttachDescribes
	return map[string]any{"RequestId": "R4"}, 200
}

func (s *Server) modify(q url.Values) (any, int) {
	e := s.find(q.Get("NetworkInterfaceId"))
	mode := q.Get("NetworkInterfaceTrafficConfig.NetworkInterfaceTrafficMode")
	if e == nil || mode == "" {
		return "InvalidParameter", 400
	}
	e.Mode = mode
	return map[string]any{"RequestId": "R5"}, 200
}

func (s *Server) instance(id string) Instance {
	if in, ok := s.Instances[id]; ok {
		return in
	}
	return Instance{Status: "Running"}
}

// detach follows the guide: an ERI is detached only from a stopped
// instance, and the primary ENI never.
func (s *Server) detach(q url.Values) (any, int) {
	e := s.find(q.Get("NetworkInterfaceId"))
	if e == nil || q.Get("InstanceId") == "" || e.InstanceID != q.Get("InstanceId") {
		return "InvalidParameter", 400
	}
	if e.Type == "Primary" {
		return "OperationDenied.PrimaryNetworkInterface", 403
	}
	if e.Mode == "HighPerformance" && s.instance(e.InstanceID).Status != "Stopped" {
		return "IncorrectInstanceStatus", 403
	}
	e.InstanceID, e.Status, e.CardIndex, e.DeviceIndex = "", "Available", 0, 0
	return map[string]any{"RequestId": "R6"}, 200
}

func (s *Server) describeInstance(q url.Values) (any, int) {
	id := q.Get("InstanceId")
	if id == "" {
		return "InvalidParameter", 400
	}
	in := s.instance(id)
	return map[string]any{"RequestId": "R7", "InstanceId": id, "Status": in.Status, "EnableJumboFrame": in.JumboFrame}, 200
}

// SetInstance sets an instance's state.
func (s *Server) SetInstance(id string, in Instance) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Instances == nil {
		s.Instances = map[string]Instance{}
	}
	s.Instances[id] = in
}

// DeleteENI removes an ENI, as DeleteNetworkInterface would; the client
// tokens that created it still name it (as the API may answer a reused
// token with the deleted ENI).
func (s *Server) DeleteENI(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, e := range s.enis {
		if e.ID == id {
			s.enis = append(s.enis[:i], s.enis[i+1:]...)
			return
		}
	}
}

// ClearFaults removes every injected fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}
