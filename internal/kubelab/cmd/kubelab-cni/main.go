// Command kubelab-cni is the Kubernetes lab's CNI plugin: it configures
// nothing and reports one address in 127.1.0.0/16 per container, derived
// from the container id. A kubelet's node is Ready only with a CNI network,
// and no real pod network may exist on the lab's machine: pods that are not
// hostNetwork get a network namespace with loopback only (the loopback
// plugin brings it up); hostNetwork pods reach the apiserver on 127.0.0.1.
//
// It speaks the CNI protocol (ADD, DEL, CHECK, STATUS, GC, VERSION) on
// stdin/stdout with the CNI_* environment, as containerd's CRI calls it.
package main

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

const supported = `["0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]`

func main() {
	if err := run(os.Getenv, os.Stdin, os.Stdout); err != nil {
		_ = json.NewEncoder(os.Stdout).Encode(map[string]any{"cniVersion": "1.0.0", "code": 100, "msg": err.Error()})
		os.Exit(1)
	}
}

// run answers the CNI_COMMAND that getenv gives (os.Getenv: the CNI_*
// environment) for the network configuration on stdin.
func run(getenv func(string) string, stdin io.Reader, stdout io.Writer) error {
	cmd := getenv("CNI_COMMAND")
	if cmd == "VERSION" {
		_, err := fmt.Fprintf(stdout, `{"cniVersion":"1.0.0","supportedVersions":%s}`+"\n", supported)
		return err
	}
	var conf struct {
		CNIVersion string `json:"cniVersion"`
	}
	b, err := io.ReadAll(stdin)
	if err != nil {
		return fmt.Errorf("reading the network configuration: %w", err)
	}
	if err := json.Unmarshal(b, &conf); err != nil {
		return fmt.Errorf("network configuration: %w", err)
	}
	switch cmd {
	case "DEL", "CHECK", "STATUS", "GC":
		return nil
	case "ADD":
	default:
		return fmt.Errorf("CNI_COMMAND %q: want ADD, DEL, CHECK, STATUS, GC or VERSION", cmd)
	}
	id, netns, ifname := getenv("CNI_CONTAINERID"), getenv("CNI_NETNS"), getenv("CNI_IFNAME")
	if id == "" || ifname == "" {
		return fmt.Errorf("ADD needs CNI_CONTAINERID and CNI_IFNAME (got %q, %q)", id, ifname)
	}
	ver := conf.CNIVersion
	if ver == "" {
		ver = "1.0.0"
	}
	iface := 0
	res := map[string]any{
		"cniVersion": ver,
		"interfaces": []map[string]string{{"name": ifname, "sandbox": netns}},
		"ips":        []map[string]any{{"address": Address(id) + "/16", "interface": &iface}},
	}
	if ver == "0.3.0" || ver == "0.3.1" {
		res["ips"].([]map[string]any)[0]["version"] = "4"
	}
	return json.NewEncoder(stdout).Encode(res)
}

// Address is the container's address in 127.1.0.0/16: the FNV-1a hash of
// its id, never .0.0 nor .255.255.
func Address(id string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	n := h.Sum32()%65534 + 1
	return fmt.Sprintf("127.1.%d.%d", n>>8, n&0xff)
}
