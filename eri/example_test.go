package eri_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/alibabacloud-go/tea/tea"
	"github.com/aliyun/credentials-go/credentials"
	"github.com/erdmakit/erdmakit/eri"
	"github.com/erdmakit/erdmakit/internal/ecsfake"
)

// ExamplePlanAttach: what is missing on an instance with one ERI on
// channel 0, for two ERIs (pure: no call is made).
func ExamplePlanAttach() {
	zero := 0
	v := &eri.View{
		Target:   eri.Target{Region: "cn-hangzhou", InstanceID: "i-example", InstanceType: "ecs.ebmgn8is.32xlarge"},
		TypeInfo: eri.TypeInfo{Type: "ecs.ebmgn8is.32xlarge", EriQuantity: 2, NetworkCardIndexes: []int{0, 1}},
		ENIs: []eri.ENI{
			{ID: "eni-primary", Type: "Primary", TrafficMode: eri.ModeStandard, InstanceID: "i-example", VSwitchID: "vsw-1", SecurityGroupIDs: []string{"sg-1"}},
			{ID: "eni-eri0", Type: "Secondary", TrafficMode: eri.ModeHighPerformance, InstanceID: "i-example", NetworkCardIndex: &zero},
		},
	}
	plan, err := eri.PlanAttach(v, nil, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("have %d, want %d\n", plan.Have, plan.Want)
	for _, st := range plan.Steps {
		for _, c := range st.Calls {
			if ci, ok := c.Params["NetworkCardIndex"]; ok {
				fmt.Println(c.Action, "NetworkCardIndex", ci)
			} else {
				fmt.Println(c.Action, c.Params["NetworkInterfaceTrafficMode"])
			}
		}
	}
	// Output:
	// have 1, want 2
	// CreateNetworkInterface HighPerformance
	// AttachNetworkInterface NetworkCardIndex 1
}

// ExampleClient_Attach runs the SDK for real against the fake ECS endpoint
// the tests use: a dry run reads and plans, a real run attaches, a rerun
// does nothing.
func ExampleClient_Attach() {
	fake := &ecsfake.Server{AccessKeyID: "LTAI5tExample", AccessKeySecret: "example-secret",
		Types: map[string]ecsfake.Type{"ecs.ebmgn8is.32xlarge": {ID: "ecs.ebmgn8is.32xlarge", EriQuantity: 2, Cards: []int{0, 1}}}}
	fake.AddENI(ecsfake.ENI{ID: "eni-primary", Type: "Primary", Mode: "Standard", Status: "InUse",
		InstanceID: "i-example", VSwitchID: "vsw-1", SecurityGroups: []string{"sg-1"}})
	srv := httptest.NewServer(fake)
	defer srv.Close()

	cred, _ := credentials.NewCredential(&credentials.Config{Type: tea.String("access_key"),
		AccessKeyId: tea.String("LTAI5tExample"), AccessKeySecret: tea.String("example-secret")})
	c, err := eri.New(eri.Config{Region: "cn-hangzhou", Endpoint: srv.URL, Credential: cred})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	t := eri.Target{Region: "cn-hangzhou", InstanceID: "i-example", InstanceType: "ecs.ebmgn8is.32xlarge"}
	ctx := context.Background()

	dry, _ := c.Attach(ctx, t, eri.AttachOptions{DryRun: true})
	fmt.Println("dry run steps:", len(dry.Plan.Steps), "creates:", fake.Count("CreateNetworkInterface"))
	res, err := c.Attach(ctx, t, eri.AttachOptions{Poll: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range res.ERIs {
		fmt.Println(e.ID, "on NetworkCardIndex", *e.NetworkCardIndex, e.Status)
	}
	again, _ := c.Attach(ctx, t, eri.AttachOptions{})
	fmt.Println("rerun steps:", len(again.Plan.Steps))
	// Output:
	// dry run steps: 2 creates: 0
	// eni-fake0001 on NetworkCardIndex 0 InUse
	// eni-fake0002 on NetworkCardIndex 1 InUse
	// rerun steps: 0
}

// ExampleCall_Command: a planned call as a person would type it.
func ExampleCall_Command() {
	c := eri.Call{Action: "AttachNetworkInterface", Params: map[string]string{"RegionId": "cn-hangzhou",
		"InstanceId": "i-example", "NetworkInterfaceId": "<created above>", "NetworkCardIndex": "1"}}
	fmt.Println(c.Command())
	// Output:
	// aliyun ecs AttachNetworkInterface --InstanceId i-example --NetworkCardIndex 1 --NetworkInterfaceId '<created above>' --RegionId cn-hangzhou
}

// ExampleQueuePairBudget: the queue pairs an instance's ERIs share, as the
// erdma-controller budgets them.
func ExampleQueuePairBudget() {
	ti := eri.TypeInfo{Type: "ecs.ebmgn8is.32xlarge", EriQuantity: 2, NetworkCardQuantity: 2, QueuePairNumber: 8, GPUAmount: 8}
	fmt.Println(eri.QueuePairBudget(ti))
	// Output:
	// 16
}

// ExampleClient_Plan: plan first (what a setup tool shows), then apply
// that plan; two ERIs on one card are planned as a move, which needs the
// instance stopped.
func ExampleClient_Plan() {
	fake := &ecsfake.Server{AccessKeyID: "LTAI5tExample", AccessKeySecret: "example-secret",
		Types: map[string]ecsfake.Type{"ecs.ebmgn8is.32xlarge": {ID: "ecs.ebmgn8is.32xlarge", EriQuantity: 2, Cards: []int{0, 1}, GPUAmount: 8, QPs: 8}}}
	fake.AddENI(ecsfake.ENI{ID: "eni-primary", Type: "Primary", Mode: "Standard", Status: "InUse",
		InstanceID: "i-example", VSwitchID: "vsw-1", SecurityGroups: []string{"sg-1"}})
	fake.AddENI(ecsfake.ENI{ID: "eni-a", Type: "Secondary", Mode: "HighPerformance", Status: "InUse", InstanceID: "i-example", DeviceIndex: 1, QueuePairNumber: 8})
	fake.AddENI(ecsfake.ENI{ID: "eni-b", Type: "Secondary", Mode: "HighPerformance", Status: "InUse", InstanceID: "i-example", DeviceIndex: 2, QueuePairNumber: 8})
	fake.SetInstance("i-example", ecsfake.Instance{Status: "Stopped"})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	cred, _ := credentials.NewCredential(&credentials.Config{Type: tea.String("access_key"),
		AccessKeyId: tea.String("LTAI5tExample"), AccessKeySecret: tea.String("example-secret")})
	c, err := eri.New(eri.Config{Region: "cn-hangzhou", Endpoint: srv.URL, Credential: cred})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ctx := context.Background()
	t := eri.Target{Region: "cn-hangzhou", InstanceID: "i-example", InstanceType: "ecs.ebmgn8is.32xlarge"}

	plan, err := c.Plan(ctx, t, eri.AttachOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, st := range plan.Steps {
		fmt.Println(st.Kind, st.ENIID, "to NetworkCardIndex", st.CardIndex, "needs stopped:", plan.NeedsStopped)
	}
	res, err := c.Apply(ctx, plan, eri.AttachOptions{Poll: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range res.Made {
		fmt.Println(m.Action, m.Params["NetworkInterfaceId"], m.Result)
	}
	fmt.Println(res.Summary())
	// Output:
	// move eni-b to NetworkCardIndex 1 needs stopped: true
	// DetachNetworkInterface eni-b ok
	// AttachNetworkInterface eni-b ok
	// now 2 ERI(s) attached, 2 wanted
}
