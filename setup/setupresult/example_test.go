package setupresult_test

import (
	"encoding/json"
	"fmt"

	"github.com/erdmakit/erdmakit/setup/setupresult"
)

// A setup run read back from `erdmakit setup --json`: the stages that did
// not complete, and what to do next.
func Example() {
	const out = `{"dry_run": false, "verdict": "not proven", "status": "fail", "changed": 1,
	  "stages": [
	    {"name": "driver", "status": "unchanged", "found": ["erdma loaded"], "changes": [], "notes": []},
	    {"name": "limits", "status": "blocked", "found": [], "changes": [], "notes": [],
	     "blocked": "the hard memlock limit is 64 KiB", "next": "raise the hard limit in /etc/security/limits.conf"}],
	  "reverts": [], "left": []}`
	var r setupresult.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Verdict)
	for _, s := range r.Stages {
		if s.Stopped() {
			fmt.Printf("%s %s: %s; next: %s\n", s.Name, s.Status, s.Blocked, s.Next)
		}
	}
	// Output:
	// not proven
	// limits blocked: the hard memlock limit is 64 KiB; next: raise the hard limit in /etc/security/limits.conf
}
