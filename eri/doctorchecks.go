package eri

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aliyun/credentials-go/credentials"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
)

// Cloud modes of the doctor.
const (
	CloudAuto = "auto" // a recorded view, else the API if credentials answer within the timeout
	CloudOn   = "on"   // the API is asked with the normal timeout; failures show as fail
	CloudOff  = "off"  // no cloud checks: the doctor as without this package
)

// CloudOptions tune the doctor's cloud checks.
type CloudOptions struct {
	Mode string // CloudAuto ("" too), CloudOn, CloudOff
	// Endpoint, Credential: as in Config.
	Endpoint   string
	Credential credentials.Credential
	// Timeout bounds the whole lookup; 0 means DefaultDoctorTimeout in auto
	// mode and 10 s in on mode.
	Timeout time.Duration
	// Cache, when set, keeps the live view between doctor runs (the
	// exporter's scrapes): the API is asked once per Cache.TTL, never per
	// scrape. nil: once per run.
	Cache *ViewCache
}

// ViewCache keeps the cloud view (or why there is none) between doctor
// runs: TTL for a view (0: an hour), FailTTL for a failure (0: 10 min).
type ViewCache struct {
	TTL, FailTTL time.Duration

	mu  sync.Mutex
	v   *View
	why error
	at  time.Time
}

func (vc *ViewCache) get(ctx context.Context, fetch func(context.Context) (*View, error)) (*View, error) {
	vc.mu.Lock()
	defer vc.mu.Unlock()
	ttl, fail := vc.TTL, vc.FailTTL
	if ttl <= 0 {
		ttl = time.Hour
	}
	if fail <= 0 {
		fail = 10 * time.Minute
	}
	if !vc.at.IsZero() && (vc.why == nil && time.Since(vc.at) < ttl || vc.why != nil && time.Since(vc.at) < fail) {
		return vc.v, vc.why
	}
	v, why := fetch(ctx)
	if why != nil && ctx.Err() != nil {
		return nil, why
	}
	vc.v, vc.why, vc.at = v, why, time.Now()
	return v, why
}

// cloudRun is the view of one doctor run, fetched once by the first check
// that needs it, for the instance the pipeline resolved (no second
// metadata lookup).
type cloudRun struct {
	opt  CloudOptions
	once sync.Once
	v    *View
	why  error
}

func (r *cloudRun) view(ctx context.Context, inv *erdma.Inventory) (*View, error) {
	r.once.Do(func() {
		if r.opt.Cache != nil {
			r.v, r.why = r.opt.Cache.get(ctx, func(ctx context.Context) (*View, error) { return r.fetch(ctx, inv) })
			return
		}
		r.v, r.why = r.fetch(ctx, inv)
	})
	return r.v, r.why
}

func (r *cloudRun) fetch(ctx context.Context, inv *erdma.Inventory) (*View, error) {
	inst := inv.Instance
	if inst == nil || inst.ID == "" || inst.Region == "" || inst.Type == "" {
		return nil, fmt.Errorf("%w: the instance id, region and type are needed (from the metadata service)", ErrNotOnECS)
	}
	timeout := r.opt.Timeout
	if timeout <= 0 {
		timeout = DefaultDoctorTimeout
		if r.opt.Mode == CloudOn {
			timeout = 10 * time.Second
		}
	}
	c, err := New(Config{Region: inst.Region, Endpoint: r.opt.Endpoint, Credential: r.opt.Credential,
		Timeout: timeout, Retries: -1})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return DoctorView(ctx, c, Target{Region: inst.Region, InstanceID: inst.ID, InstanceType: inst.Type}, timeout)
}

// DoctorChecks are the cloud's checks for one doctor run, decided from the
// inventory (so that this package does not import the doctor; put them in
// doctor.Options.Checks through doctor.HostChecks):
//   - network-card-channel from the real NetworkCardIndex (replacing the
//     in-host hint) when a view exists;
//   - eri-mode: every eRDMA netdev's ENI is HighPerformance and every ERI
//     has an eRDMA device;
//   - instance-profile: when the built-in table does not know the type, the
//     profile DescribeInstanceTypes gives (later checks see it).
//
// The view is h's recording (erdmakit/cloud.json) on a recorded host and
// the API's on the live one, asked once, by the first check that needs it,
// for the instance the pipeline resolved. In auto mode a recording without a
// view gets no cloud check (the report is as without this package), and on
// the live host the lookup is bounded to about a second; eri-mode says why
// when there is no view. Call it once per run; reading the recorded view
// gives up when ctx ends.
func DoctorChecks(ctx context.Context, h erdma.Host, opt CloudOptions) []erdma.HostCheck {
	if opt.Mode == CloudOff {
		return nil
	}
	r := &cloudRun{opt: opt}
	if !h.Live() {
		v, err := RecordedView(ctx, h)
		if v == nil && err == nil && opt.Mode != CloudOn {
			return nil // a recording without a view: the doctor as before
		}
		r.once.Do(func() {
			r.v, r.why = v, err
			if v == nil && err == nil {
				r.why = errors.New("the recording carries no cloud view (erdmakit record --cloud stores one)")
			}
		})
	}
	var builtinProfile, builtinChannel func(context.Context, *erdma.Inventory, erdma.DoctorOptions) health.Finding
	for _, hc := range erdma.HostChecks() {
		switch hc.ID {
		case erdma.FindingInstanceProfile:
			builtinProfile = hc.Run
		case erdma.FindingNetworkCardChannel:
			builtinChannel = hc.Run
		}
	}
	profile := erdma.HostCheck{Check: erdma.Check{ID: erdma.FindingInstanceProfile, Step: "guide step 1",
		Title: "the instance type is a known eRDMA GPU type (or DescribeInstanceTypes says so)"},
		Run: func(ctx context.Context, inv *erdma.Inventory, hopt erdma.DoctorOptions) health.Finding {
			f := builtinProfile(ctx, inv, hopt)
			if inv.Profile != nil || inv.Instance == nil {
				return f
			}
			v, err := r.view(ctx, inv)
			if err != nil || v == nil || v.TypeInfo.Type == "" {
				return f
			}
			ti := v.TypeInfo
			if ti.EriQuantity <= 0 {
				f.Severity = health.Fail
				f.Summary = fmt.Sprintf("%s has no ERI (DescribeInstanceTypes EriQuantity 0)", ti.Type)
				f.Evidence = append(f.Evidence, "DescribeInstanceTypes ("+v.Source+"): EriQuantity 0")
				f.Remediation = "use an ERI-capable GPU type (ebmgn7ex, ebmgn8is, gn8is, ebmgn9g...)"
				return f
			}
			p := ProfileFromType(ti)
			inv.Profile = p
			return health.Finding{Severity: health.OK,
				Summary:  fmt.Sprintf("%s supports %d ERI(s) (DescribeInstanceTypes; not in the built-in table)", ti.Type, ti.EriQuantity),
				Evidence: append(f.Evidence, "profile source: "+p.Source)}
		}}
	channel := erdma.HostCheck{Check: erdma.Check{ID: erdma.FindingNetworkCardChannel, Step: "guide step 1",
		Title: "two ERIs sit on different network-card channels (NetworkCardIndex from the ECS API)"},
		Run: func(ctx context.Context, inv *erdma.Inventory, hopt erdma.DoctorOptions) health.Finding {
			v, _ := r.view(ctx, inv)
			if v == nil {
				return builtinChannel(ctx, inv, hopt)
			}
			return ChannelFinding(v)
		}}
	mode := erdma.HostCheck{Check: erdma.Check{ID: CheckERIMode, Step: "guide steps 1, 3",
		Title: "every eRDMA netdev is an ERI (HighPerformance) and every ERI has its eRDMA device"},
		After: erdma.FindingNetworkCardChannel,
		Run: func(ctx context.Context, inv *erdma.Inventory, _ erdma.DoctorOptions) health.Finding {
			v, why := r.view(ctx, inv)
			if v != nil {
				return ModeFinding(v, inv)
			}
			sev := health.Skip
			if opt.Mode == CloudOn {
				sev = health.Fail
			}
			f := health.Finding{Severity: sev, Summary: "the ECS API was not asked or did not answer: " + why.Error()}
			switch {
			case errors.Is(why, ErrNoCredentials):
				f.Remediation = "give credentials (ALIBABA_CLOUD_ACCESS_KEY_ID/_SECRET, the aliyun CLI profile, or the instance's RAM role) with the policy of `erdmakit eri policy`"
			case errors.Is(why, ErrForbidden):
				f.Remediation = "grant the RAM policy of `erdmakit eri policy`"
			}
			return f
		}}
	return []erdma.HostCheck{profile, channel, mode}
}
