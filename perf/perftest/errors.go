package perftest

// ErrorLines are the runs' errors as the CLI prints them: "DEV: error" for
// a pair that failed, "DEV: PROGRAM: line" for each error either side's
// program printed.
func ErrorLines(runs []Run, program string) []string {
	var out []string
	for _, r := range runs {
		if r.Error != "" {
			out = append(out, r.Device+": "+r.Error)
		}
		for _, side := range []*Report{r.Client, r.Server} {
			if side != nil {
				for _, e := range side.Errors {
					out = append(out, r.Device+": "+program+": "+e)
				}
			}
		}
	}
	return out
}
