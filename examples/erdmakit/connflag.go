package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/erdmakit/erdmakit/connect"
)

// connFlag is --conn with perftest's -R as its shorthand for rdma_cm: the
// one connection-method flag of bw, bw lat, perftest and perftest lat.
type connFlag struct {
	method connect.Method
	rdmaCM bool
}

// add registers the pair; auto says what auto does for this command.
func (c *connFlag) add(fl *pflag.FlagSet, auto string) {
	fl.Var(&c.method, "conn", "connection method: auto ("+auto+"), oob or rdma_cm")
	fl.BoolVarP(&c.rdmaCM, "rdma-cm", "R", false, "same as --conn rdma_cm (perftest's -R)")
}

// get is the method asked for; -R with --conn oob is a usage error.
func (c *connFlag) get() (connect.Method, error) {
	if !c.rdmaCM {
		return c.method, nil
	}
	if c.method != connect.Auto && c.method != connect.RDMACM {
		return 0, fmt.Errorf("-R and --conn %s disagree", c.method)
	}
	return connect.RDMACM, nil
}
