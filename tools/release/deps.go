package main

// cobra/doc is imported by the man page generator that cmdMan adds to
// erdmakit's package main through -overlay; this import keeps it (and
// go-md2man) in this module's requirements and go.sum.
import _ "github.com/spf13/cobra/doc"
