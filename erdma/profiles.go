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
	}
}

// KnownFamilies lists the instance families with a profile, sorted.
func KnownFamilies() []string {
	return []string{"ebmgn7ex", "ebmgn7ix", "ebmgn7vx", "ebmgn8is", "ebmgn9g", "ebmgn9gc", "ebmgn9ge", "gn8is", "gn8is-2x"}
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
	if pr, found := all[t.Family]; found {
		return &pr, true, nil
	}
	if pr, found := all[t.Base]; found {
		pr.Source += "; profile of the base family " + strconv.Quote(t.Base) + " used for " + strconv.Quote(t.Family)
		return &pr, true, nil
	}
	return nil, false, nil
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
