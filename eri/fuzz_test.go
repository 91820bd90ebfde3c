package eri

import (
	"encoding/json"
	"testing"

	"github.com/erdmakit/erdmakit/erdma"

	ecs "github.com/alibabacloud-go/ecs-20140526/v7/client"
	"github.com/alibabacloud-go/tea/dara"
)

// FuzzDescribeAnswer feeds arbitrary bodies through the SDK's own decoding
// (dara.Convert, as its clients do) and our conversion of the
// DescribeNetworkInterfaces answer: an error or ENIs, never a panic. The
// whole HTTP path is exercised by the fake-endpoint tests.
func FuzzDescribeAnswer(f *testing.F) {
	f.Add([]byte(`{"body":{"RequestId":"R","NetworkInterfaceSets":{"NetworkInterfaceSet":[{"NetworkInterfaceId":"eni-1",` +
		`"MacAddress":"00:16:3E:00:00:01","Type":"Primary","NetworkInterfaceTrafficMode":"HighPerformance","Status":"InUse",` +
		`"InstanceId":"i-fake0001","Attachment":{"NetworkCardIndex":1,"DeviceIndex":0},` +
		`"SecurityGroupIds":{"SecurityGroupId":["sg-1"]},"Tags":{"Tag":[{"TagKey":"k","TagValue":"v"}]}}]}}}`))
	f.Add([]byte(`{"body":{"NetworkInterfaceSets":{"NetworkInterfaceSet":[null,{"Attachment":null}]}}}`))
	f.Add([]byte(`{"body":{"NetworkInterfaceSets":{"NetworkInterfaceSet":[{"Attachment":{"NetworkCardIndex":"x"}}]}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var m map[string]any
		if json.Unmarshal(body, &m) != nil {
			return
		}
		var resp *ecs.DescribeNetworkInterfacesResponse
		if dara.Convert(m, &resp) != nil || resp == nil || resp.Body == nil || resp.Body.NetworkInterfaceSets == nil {
			return
		}
		v := &View{Target: Target{InstanceID: "i-fake0001"}}
		for _, s := range resp.Body.NetworkInterfaceSets.NetworkInterfaceSet {
			if s != nil {
				v.ENIs = append(v.ENIs, eniFrom(s))
			}
		}
		_ = v.SharedChannels()
		_ = Match(v, nil).Findings()
	})
}

// FuzzRedactViewFile: a recorded view of any shape is redacted or refused
// with an error, never a panic, and what comes out parses again.
func FuzzRedactViewFile(f *testing.F) {
	one := 1
	seed, _ := MarshalView(&View{Target: Target{Region: "cn-hangzhou", InstanceID: "i-fake0001", InstanceType: "ecs.ebmgn8is.32xlarge"},
		TypeInfo: TypeInfo{Type: "ecs.ebmgn8is.32xlarge", EriQuantity: 2, NetworkCardIndexes: []int{0, 1}},
		ENIs: []ENI{{ID: "eni-1", MAC: "00:16:3e:00:00:01", TrafficMode: ModeHighPerformance, IP: "10.0.1.2", NetworkCardIndex: &one,
			InstanceID: "i-fake0001", SecurityGroupIDs: []string{"sg-1"}, Tags: map[string]string{TagInstance: "i-fake0001", "team": "x"}}},
		Source: "api"})
	f.Add(seed)
	f.Add([]byte(`{"enis":[null,{"mac":"zz","ip":"::1","tags":{}}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := RedactViewFile(erdma.NewRedactor(), data)
		if err != nil {
			return
		}
		var v View
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("redacted view does not parse: %v", err)
		}
	})
}
