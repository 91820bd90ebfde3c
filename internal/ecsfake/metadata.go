package ecsfake

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"
)

// MetadataToken is the token the metadata fake hands out.
const MetadataToken = "fake-metadata-token"

// NIC is what the metadata fake serves for one MAC.
type NIC struct {
	IP, CIDR, Gateway, ENIID string
}

// Metadata is a fake ECS instance metadata service with the token protocol:
// instance items, network/interfaces/macs/<mac>/..., and the RAM role's
// STS credentials (what credentials-go's ECS RAM role provider reads).
type Metadata struct {
	InstanceID, InstanceType, Region string
	NICs                             map[string]NIC // by lower-case MAC
	Role                             string         // "" serves no role (404)
	RoleAK, RoleSecret, RoleToken    string

	mu   sync.Mutex
	hits map[string]int
}

// Hits returns how often path was asked.
func (m *Metadata) Hits(path string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hits[path]
}

func (m *Metadata) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	if m.hits == nil {
		m.hits = map[string]int{}
	}
	m.hits[r.URL.Path]++
	m.mu.Unlock()
	if r.Method == http.MethodPut && r.URL.Path == "/latest/api/token" {
		if r.Header.Get("X-aliyun-ecs-metadata-token-ttl-seconds") == "" {
			http.Error(w, "ttl missing", http.StatusBadRequest)
			return
		}
		_, _ = w.Write([]byte(MetadataToken))
		return
	}
	if r.Header.Get("X-aliyun-ecs-metadata-token") != MetadataToken {
		http.Error(w, "token", http.StatusUnauthorized)
		return
	}
	p := strings.TrimPrefix(r.URL.Path, "/latest/meta-data/")
	val := ""
	switch {
	case p == "instance-id":
		val = m.InstanceID
	case p == "instance/instance-type":
		val = m.InstanceType
	case p == "region-id":
		val = m.Region
	case p == "ram/security-credentials/":
		val = m.Role
	case m.Role != "" && p == "ram/security-credentials/"+m.Role:
		b, _ := json.Marshal(map[string]string{"AccessKeyId": m.RoleAK, "AccessKeySecret": m.RoleSecret,
			"SecurityToken": m.RoleToken, "Expiration": time.Now().Add(time.Hour).UTC().Format("2006-01-02T15:04:05Z"),
			"LastUpdated": time.Now().UTC().Format("2006-01-02T15:04:05Z"), "Code": "Success"})
		val = string(b)
	case strings.HasPrefix(p, "network/interfaces/macs/"):
		mac, item, _ := strings.Cut(strings.TrimPrefix(p, "network/interfaces/macs/"), "/")
		nic, ok := m.NICs[strings.ToLower(mac)]
		if ok {
			val = map[string]string{"primary-ip-address": nic.IP, "vswitch-cidr-block": nic.CIDR,
				"gateway": nic.Gateway, "network-interface-id": nic.ENIID}[item]
		}
	}
	if val == "" {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write([]byte(val))
}
