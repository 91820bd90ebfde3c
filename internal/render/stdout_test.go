package render

import "os"

// stdout writes to os.Stdout at call time, as Example functions need.
type stdout struct{}

func (stdout) Write(p []byte) (int, error) { return os.Stdout.Write(p) }
