package erdma

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ErrInstanceType is returned for a string that is not an ECS instance type
// of the form "ecs.<family>.<size>".
var ErrInstanceType = errors.New("not an ECS instance type (want ecs.<family>.<size>)")

// InstanceType is an ECS instance type split into its parts:
// "ecs.gn8is-2x.8xlarge" -> Family "gn8is-2x", Base "gn8is", Size "8xlarge".
type InstanceType struct {
	Family string // "ebmgn8is", "gn8is-2x"
	// Base is Family without a trailing "-<N>x" variant ("gn8is-2x" ->
	// "gn8is"); equal to Family when there is none.
	Base string
	Size string // "32xlarge"
}

// String returns the type as ECS spells it.
func (t InstanceType) String() string { return "ecs." + t.Family + "." + t.Size }

var (
	familyRE  = regexp.MustCompile(`^[a-z][a-z0-9]*(-[0-9]+x)?$`)
	sizeRE    = regexp.MustCompile(`^[a-z0-9-]+$`)
	variantRE = regexp.MustCompile(`-[0-9]+x$`)
)

// ParseInstanceType splits "ecs.<family>.<size>" (case-insensitive, spaces
// around it ignored). Anything else is an error wrapping ErrInstanceType.
func ParseInstanceType(s string) (InstanceType, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	parts := strings.Split(t, ".")
	if len(parts) != 3 || parts[0] != "ecs" || !familyRE.MatchString(parts[1]) || !sizeRE.MatchString(parts[2]) {
		return InstanceType{}, fmt.Errorf("instance type %q: %w", s, ErrInstanceType)
	}
	return InstanceType{
		Family: parts[1],
		Base:   variantRE.ReplaceAllString(parts[1], ""),
		Size:   parts[2],
	}, nil
}

// Where the profile figures come from. Only the domain document's facts are
// used; a figure it does not give is left 0 (unknown), never guessed.
const (
	sourceGuide = "Alibaba Cloud guide 'enable eRDMA on a GPU instance' (docs/erdma-domain.md section 1): " +
		"family supports ERI, at most 2 per instance; no ERI count, GPU count or bandwidth given"
	sourceDataOnACK = "github.com/AliyunContainerService/data-on-ack ray-direct-transport-on-erdma " +
		"(docs/erdma-domain.md section 5)"
)

// Section 10's sources (docs/erdma-domain.md): Alibaba Cloud's published
// instance tables, 'GPU-accelerated compute-optimized instance families'
// (alibabacloud.com/help/en/ecs/user-guide/gpu-accelerated-compute-optimized-and-vgpu-accelerated-instance-families-1),
// 'Elastic bare metal server overview'
// (help.aliyun.com/zh/ecs/user-guide/elastic-bare-metal-server-overview) and
// PAI 'eRDMA distributed training'
// (alibabacloud.com/help/en/pai/user-guide/erdma-distributed-training-with-high-performance-networks).
// sourceTables names the three pages together; each row says which figures it took.
const sourceTables = "docs/erdma-domain.md section 10 (Alibaba Cloud GPU instance families, elastic bare metal overview, PAI eRDMA training)"

// typeProfiles are section 10's per-type rows: GPUs, GPU model, baseline
// network bandwidth and, where PAI's page gives it, the eRDMA NIC count.
// A figure the table does not give stays 0 (unknown). Family-wide figures
// (data-on-ack's measured bandwidth) are merged in by LookupProfile.
func typeProfiles() map[string]Profile {
	row := func(typ string, gpus int, model string, net float64, eris int, note string) Profile {
		return Profile{Type: typ, GPUs: gpus, GPUModel: model, NetGbps: net, ERIs: eris,
			Source: sourceTables + ": " + typ + ": " + note}
	}
	return map[string]Profile{
		"ecs.ebmgn7ex.32xlarge": row("ecs.ebmgn7ex.32xlarge", 8, "A100 80 GB", 160, 2,
			"8 x A100 80 GB, 160 Gbit/s (80x2), 2 ERIs on distinct NetworkCardIndex = 160, same index <= 100"),
		"ecs.ebmgn7vx.32xlarge": row("ecs.ebmgn7vx.32xlarge", 8, "80 GB", 160, 0,
			"8 x 80 GB GPUs, 160 Gbit/s, up to 160 over <= 2 eRDMA devices (count not given)"),
		"ecs.ebmgn7ix.32xlarge": row("ecs.ebmgn7ix.32xlarge", 8, "A10", 160, 0,
			"8 x A10, 160 Gbit/s, up to 160 over <= 2 eRDMA devices (count not given)"),
		"ecs.ebmgn8is.32xlarge": row("ecs.ebmgn8is.32xlarge", 8, "L20 48 GB", 160, 2,
			"8 x L20 48 GB, 160 Gbit/s (80x2), 2 eRDMA NICs"),
		"ecs.gn8is.2xlarge": row("ecs.gn8is.2xlarge", 1, "L20", 8, 1, "1 x L20, 8 Gbit/s, 1 eRDMA NIC"),
		"ecs.gn8is.4xlarge": row("ecs.gn8is.4xlarge", 1, "L20", 16, 1, "1 x L20, 16 Gbit/s, 1 eRDMA NIC"),
		"ecs.gn8is-2x.8xlarge": row("ecs.gn8is-2x.8xlarge", 2, "L20", 32, 1,
			"2 x L20, 32 Gbit/s, 1 eRDMA NIC"),
		"ecs.gn8is-4x.16xlarge": row("ecs.gn8is-4x.16xlarge", 4, "L20", 64, 1,
			"4 x L20, 64 Gbit/s, 1 eRDMA NIC"),
		"ecs.gn8is-8x.32xlarge": row("ecs.gn8is-8x.32xlarge", 8, "L20", 100, 0,
			"8 x L20, 100 Gbit/s, ERI (count not published)"),
		"ecs.ebmgn8v.48xlarge": row("ecs.ebmgn8v.48xlarge", 8, "96 GB HBM3", 170, 2,
			"8 x 96 GB HBM3, 170 Gbit/s (85x2), 2 eRDMA NICs, 'up to 160'"),
		"ecs.ebmgn8ia.64xlarge": row("ecs.ebmgn8ia.64xlarge", 4, "L20", 160, 0,
			"4 x L20, 160 Gbit/s, ERI (count not given), 2 sockets"),
		"ecs.ebmgn9g.64xlarge": row("ecs.ebmgn9g.64xlarge", 8, "48 GB", 360, 0,
			"8 GPUs 48 GB, 360 Gbit/s (180x2), up to 360 over ERIs (count not given)"),
		"ecs.ebmgn9ge.64xlarge": row("ecs.ebmgn9ge.64xlarge", 8, "72 GB", 360, 0,
			"8 GPUs 72 GB, 360 Gbit/s (180x2), up to 360 over ERIs (count not given)"),
		"ecs.ebmgn9gc.64xlarge": row("ecs.ebmgn9gc.64xlarge", 8, "72 GB", 360, 0,
			"8 GPUs 72 GB, 360 Gbit/s (180x2), up to 360 over ERIs (count not given)"),
	}
}

// MaxERIs is the most eRDMA interfaces any instance can have (guide step 1).
const MaxERIs = 2

// profiles returns the known instance families. A function, not a variable,
// so that no caller can change the table.
func profiles() map[string]Profile {
	guide := func(family string) Profile {
		return Profile{Family: family, Source: sourceGuide}
	}
	return map[string]Profile{
		"ebmgn7ex": guide("ebmgn7ex"),
		"ebmgn7ix": guide("ebmgn7ix"),
		"ebmgn7vx": guide("ebmgn7vx"),
		"ebmgn8is": guide("ebmgn8is"),
		"gn8is":    guide("gn8is"),
		"gn8is-2x": {Family: "gn8is-2x", ERIs: 1, WriteGbps: 25,
			Source: sourceDataOnACK + ": gn8is-2x: 1 ERI, 25 Gbps"},
		"ebmgn9g": guide("ebmgn9g"),
		"ebmgn9gc": {Family: "ebmgn9gc", ERIs: 2, WriteGbps: 380,
			Source: sourceDataOnACK + ": ebmgn9gc: ~380 Gbps across 2 ERIs"},
		"ebmgn9ge": guide("ebmgn9ge"),
		"ebmgn8v":  {Family: "ebmgn8v", Source: sourceTables + ": ebmgn8v has eRDMA NICs"},
		"ebmgn8ia": {Family: "ebmgn8ia", Source: sourceTables + ": ebmgn8ia has ERI"},
	}
}

// KnownFamilies lists the instance families with a profile, sorted.
func KnownFamilies() []string {
	return []string{"ebmgn7ex", "ebmgn7ix", "ebmgn7vx", "ebmgn8ia", "ebmgn8is", "ebmgn8v", "ebmgn9g", "ebmgn9gc", "ebmgn9ge", "gn8is", "gn8is-2x"}
}

// LookupProfile returns the profile of an instance type ("ecs.ebmgn8is.32xlarge").
// A family variant without its own profile ("gn8is-4x") falls back to its
// base family ("gn8is"). ok is false for a type that parses but is not a
// known eRDMA GPU family; err is set when the string is not an instance type.
func LookupProfile(instanceType string) (p *Profile, ok bool, err error) {
	t, err := ParseInstanceType(instanceType)
	if err != nil {
		return nil, false, err
	}
	all := profiles()
	pr, found := all[t.Family]
	if !found {
		if pr, found = all[t.Base]; found {
			pr.Source += "; profile of the base family " + strconv.Quote(t.Base) + " used for " + strconv.Quote(t.Family)
		}
	}
	if !found {
		return nil, false, nil
	}
	if row, ok := typeProfiles()[t.String()]; ok {
		pr = mergeProfile(pr, row)
	}
	return &pr, true, nil
}

// mergeProfile overlays the size's own figures on its family's: a figure
// either source gives is kept, one neither gives stays unknown.
func mergeProfile(fam, row Profile) Profile {
	out := fam
	out.Type = row.Type
	if row.ERIs > 0 {
		out.ERIs = row.ERIs
	}
	out.GPUs, out.GPUModel, out.NetGbps = row.GPUs, row.GPUModel, row.NetGbps
	out.Source = row.Source
	if fam.ERIs > 0 || fam.WriteGbps > 0 {
		out.Source += "; family figures: " + fam.Source
	}
	return out
}

// SetInstance records inst in inv and looks up its profile. An unknown or
// malformed type leaves inv.Profile nil (the doctor reports it as unknown).
func SetInstance(inv *Inventory, inst *Instance) {
	inv.Instance = inst
	inv.Profile = nil
	if inst == nil || inst.Type == "" {
		return
	}
	if p, ok, _ := LookupProfile(inst.Type); ok {
		inv.Profile = p
	}
}
