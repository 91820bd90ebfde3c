package eri

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
)

// ViewFile is where a recorded host keeps the cloud's view (no credentials).
const ViewFile = "erdmakit/cloud.json"

// Check ids the cloud view decides.
const (
	CheckChannel = "network-card-channel" // replaces the in-host hint when a view exists
	CheckERIMode = "eri-mode"
)

// MarshalView is the recorded form of v (for erdma.RecordOptions.Files).
func MarshalView(v *View) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cloud view: %w", err)
	}
	return append(b, '\n'), nil
}

// RecordedView reads the view a recording carries; nil without error when
// it has none (or h is live). It gives up when ctx ends.
func RecordedView(ctx context.Context, h erdma.Host) (*View, error) {
	if h.Live() {
		return nil, nil
	}
	b, err := h.ReadFile(ctx, ViewFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(b) > 1<<20 {
		return nil, fmt.Errorf("%s: larger than 1 MiB: %w", h.Path(ViewFile), erdma.ErrMalformed)
	}
	var v View
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", h.Path(ViewFile), erdma.ErrMalformed, err)
	}
	if len(v.ENIs) > maxENIs {
		return nil, fmt.Errorf("%s: %d ENIs, at most %d: %w", h.Path(ViewFile), len(v.ENIs), maxENIs, erdma.ErrMalformed)
	}
	v.Source = "recorded"
	return &v, nil
}

// DefaultDoctorTimeout bounds the automatic cloud lookup of the doctor, so
// that without credentials it behaves as before within about a second.
const DefaultDoctorTimeout = time.Second

// DoctorView asks the cloud for the view the doctor's cloud checks need,
// all within timeout (0: DefaultDoctorTimeout). The error is the skip
// reason when there is no view.
func DoctorView(ctx context.Context, c *Client, t Target, timeout time.Duration) (*View, error) {
	if timeout <= 0 {
		timeout = DefaultDoctorTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := c.CheckCredentials(ctx); err != nil {
		return nil, err
	}
	type res struct {
		v   *View
		err error
	}
	ch := make(chan res, 1)
	go func() {
		v, err := c.Describe(ctx, t)
		ch <- res{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("the ECS API did not answer within %s: %w", timeout, ctx.Err())
	}
}

// ProfileFromType is the profile DescribeInstanceTypes gives, for a type
// the built-in table does not know.
func ProfileFromType(ti TypeInfo) *erdma.Profile {
	if ti.Type == "" {
		return nil
	}
	fam := ti.Type
	if it, err := erdma.ParseInstanceType(ti.Type); err == nil {
		fam = it.Family
	}
	return &erdma.Profile{Family: fam, Type: ti.Type, ERIs: min(ti.EriQuantity, erdma.MaxERIs), GPUs: ti.GPUAmount,
		GPUModel: ti.GPUSpec, NetGbps: float64(ti.BandwidthRxKbps) / 1e6,
		Source: fmt.Sprintf("DescribeInstanceTypes %s: EriQuantity %d, GPUAmount %d, InstanceBandwidthRx %d Kbit/s",
			ti.Type, ti.EriQuantity, ti.GPUAmount, ti.BandwidthRxKbps)}
}

func cardOf(e ENI) string {
	if e.NetworkCardIndex == nil {
		return "unknown"
	}
	return fmt.Sprint(*e.NetworkCardIndex)
}

// ChannelFinding is network-card-channel decided from the real
// NetworkCardIndex: fail when two ERIs share one (half bandwidth each).
func ChannelFinding(v *View) health.Finding {
	f := health.Finding{ID: CheckChannel}
	eris := v.ERIs()
	for _, e := range eris {
		f.Evidence = append(f.Evidence, fmt.Sprintf("DescribeNetworkInterfaces (%s): %s mac %s NetworkCardIndex %s status %s",
			v.Source, e.ID, e.MAC, cardOf(e), e.Status))
	}
	if len(eris) < 2 {
		f.Severity = health.Skip
		f.Summary = fmt.Sprintf("%d ERI(s) attached: no second ERI to share a channel with", len(eris))
		return f
	}
	shared := v.SharedChannels()
	if len(shared) == 0 {
		f.Severity = health.OK
		f.Summary = fmt.Sprintf("%d ERIs on distinct network-card channels (NetworkCardIndex, from the ECS API)", len(eris))
		return f
	}
	idx := make([]int, 0, len(shared))
	for k := range shared {
		idx = append(idx, k)
	}
	sort.Ints(idx)
	var parts []string
	for _, k := range idx {
		parts = append(parts, fmt.Sprintf("%s on NetworkCardIndex %d", strings.Join(shared[k], " and "), k))
	}
	f.Severity = health.Fail
	f.Summary = strings.Join(parts, "; ") + ": they share one channel, the total bandwidth halves"
	f.Remediation = "move one to a free card: stop the instance first (an ERI is detached only from a stopped " +
		"instance; the primary ENI cannot be detached), then `erdmakit eri attach --instance-id ID --region R " +
		"--instance-type T` from another machine detaches it and re-attaches it on a free NetworkCardIndex; " +
		"`eri convert` / ModifyNetworkInterfaceAttribute cannot choose the channel"
	return f
}

// ModeFinding is eri-mode: every eRDMA netdev's ENI is HighPerformance,
// and every HighPerformance ENI has an eRDMA device in the OS.
func ModeFinding(v *View, inv *erdma.Inventory) health.Finding {
	f := health.Finding{ID: CheckERIMode}
	st := Match(v, inv)
	var bad []string
	var fix []string
	byMAC := map[string]ENIStatus{}
	for _, e := range st.ENIs {
		byMAC[e.MAC] = e
		if !e.IsERI() || e.InstanceID != v.Target.InstanceID {
			continue
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s %s HighPerformance: netdev %s, eRDMA device %s",
			e.ID, e.MAC, orNone(e.Netdev), orNone(e.RDMADevice)))
		switch {
		case e.Netdev == "":
			bad = append(bad, fmt.Sprintf("ERI %s (%s) has no netdev in the OS", e.ID, e.MAC))
			fix = append(fix, "configure the secondary ENI (`erdmakit eri configure`), check `ip link`")
		case e.RDMADevice == "":
			bad = append(bad, fmt.Sprintf("ERI %s (netdev %s) has no eRDMA device", e.ID, e.Netdev))
			fix = append(fix, "install/load the eRDMA driver (env_setup.sh --egs; `eadm ver`)")
		}
	}
	if inv != nil {
		macOf := map[string]string{}
		for _, n := range inv.Netdevs {
			macOf[n.Name] = strings.ToLower(n.MAC)
		}
		for _, d := range inv.Devices {
			if !d.ERDMA || d.Netdev == "" {
				continue
			}
			e, ok := byMAC[macOf[d.Netdev]]
			switch {
			case !ok:
				bad = append(bad, fmt.Sprintf("%s (netdev %s, mac %s) is no ENI of %s", d.Name, d.Netdev, macOf[d.Netdev], v.Target.InstanceID))
			case !e.IsERI():
				bad = append(bad, fmt.Sprintf("%s's ENI %s is %s, not HighPerformance", d.Name, e.ID, e.TrafficMode))
				fix = append(fix, "`erdmakit eri attach` (new ERIs on free channels) or `erdmakit eri convert "+e.ID+"`")
			}
		}
	}
	if len(st.ENIs) == 0 || len(v.ERIs()) == 0 && len(bad) == 0 {
		f.Severity = health.Fail
		f.Summary = "no ERI (HighPerformance ENI) attached to the instance"
		f.Remediation = "erdmakit eri attach"
		return f
	}
	if len(bad) > 0 {
		f.Severity = health.Fail
		f.Summary = strings.Join(bad, "; ")
		f.Remediation = strings.Join(uniq(fix), "; ")
		return f
	}
	f.Severity = health.OK
	f.Summary = fmt.Sprintf("%d ERI(s), each with its eRDMA device; every eRDMA netdev is an ERI", len(v.ERIs()))
	return f
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func uniq(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// RecordFiles asks the cloud for t's view and returns it as the file a
// recording carries (erdma.RecordOptions.Files); a redacted recording
// redacts it with RedactViewFile (erdma.RecordOptions.FileRedactors).
func RecordFiles(ctx context.Context, c *Client, t Target) (map[string][]byte, error) {
	v, err := c.Describe(ctx, t)
	if err != nil {
		return nil, err
	}
	b, err := MarshalView(v)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{ViewFile: b}, nil
}
