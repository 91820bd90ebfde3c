package main

import (
	"io"

	"github.com/erdmakit/erdmakit/nccl"
	"github.com/erdmakit/erdmakit/nccl/ncclog"
	"github.com/erdmakit/erdmakit/report"
	"github.com/spf13/cobra"
)

// newParseNCCLCmd: `erdmakit parse nccl FILE`, an nccl-tests log
// (all_reduce_perf and friends, every format) into the test result, judged
// by nccl.Diagnose as nccl run judges a run.
func newParseNCCLCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "nccl FILE",
		Short: "Parse an nccl-tests log (- for stdin): rows, bus bandwidth, #wrong, failures, NCCL lines, findings",
		Long: "Reads nccl-tests output (old and new table formats, NCCL 1.x, rows interleaved with NCCL INFO\n" +
			"lines and launcher noise) and prints the rows, the average bus bandwidth, out-of-bounds values and\n" +
			"failures, plus what the NCCL lines in the same log say, then the findings of the diagnosis nccl run\n" +
			"makes (RDMA or TCP sockets, GPUDirect RDMA, #wrong, memlock, ...); --json prints the result (schema\n" +
			"in docs/parse.md). Exit: the findings' worst severity, 0 ok, 1 warn (e.g. GPUDirect RDMA not used),\n" +
			"2 fail (NCCL fell back to TCP sockets, any failure, #wrong, out-of-bounds value, missing table or\n" +
			"footer); 3 when FILE cannot be read or holds no nccl-tests output.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return parseFile(g, cmd, args[0], ncclog.ParseTests, judgeTests, printParsedTests)
		},
	}
}

// newParseNCCLLogCmd: `erdmakit parse nccl-log FILE`, NCCL_DEBUG=INFO output
// into the log summary, judged by ncclog.Diagnose.
func newParseNCCLLogCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "nccl-log FILE",
		Short: "Analyse an NCCL_DEBUG=INFO log (- for stdin): network, IB devices, GDR, channel transports, findings",
		Long: "Streams an NCCL_DEBUG=INFO log of any size in constant memory (any line prefix: mpirun, Ray,\n" +
			"host:pid:tid) and prints the NCCL version, the network NCCL used, its IB devices and socket\n" +
			"interfaces, GPUDirect RDMA per HCA, the channel transports and NCCL's warnings, then the findings\n" +
			"of the diagnosis of the log (RDMA or TCP sockets, GPUDirect RDMA, NICs, memlock, NCCL version);\n" +
			"--json prints the summary (schema in docs/parse.md). Exit: the findings' worst severity, 0 ok,\n" +
			"1 warn (GPUDirect RDMA not used, idle NICs, NCCL WARN lines), 2 fail (NCCL fell back to TCP sockets,\n" +
			"memlock, a crashing NCCL version, a graph file naming missing GPUs); 3 when FILE cannot be read or\n" +
			"holds no NCCL line.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return parseFile(g, cmd, args[0], ncclog.Analyze, judgeNCCLLog, func(w io.Writer, s *ncclog.Summary, vd parseVerdict) error {
				if err := report.WriteNCCLLogTable(w, s, report.TableOptions{}); err != nil {
					return err
				}
				return writeVerdict(w, nil, s.Warnings, vd, worstIDs(vd))
			})
		},
	}
}

// judgeTests is nccl run's diagnosis of a run (nccl.Diagnose, no
// expectation: a log does not say the hosts' instance type).
func judgeTests(r *ncclog.TestResult) parseVerdict {
	fs := nccl.Diagnose(r, nccl.Expectation{})
	return parseVerdict{findings: fs, status: nccl.Worst(fs)}
}

// judgeNCCLLog is the diagnosis of what an NCCL_DEBUG=INFO log alone says
// (ncclog.Diagnose): once, on the summary, so it costs no work per line.
func judgeNCCLLog(s *ncclog.Summary) parseVerdict {
	fs := ncclog.Diagnose(s)
	return parseVerdict{findings: fs, status: nccl.Worst(fs)}
}

// printParsedTests writes the human form of an nccl-tests result: report's
// table of it, then the verdict.
func printParsedTests(w io.Writer, r *ncclog.TestResult, vd parseVerdict) error {
	if err := report.WriteNCCLTestsLogTable(w, r, report.TableOptions{}); err != nil {
		return err
	}
	var warns []string
	if r.NCCL != nil {
		warns = r.NCCL.Warnings
	}
	var why []string
	if !r.OK {
		why = append(why, r.Reasons...)
	}
	return writeVerdict(w, r.Failures, warns, vd, append(why, worstIDs(vd)...))
}
