// Package report is where erdmakit's results are presented; the domain
// packages return data only.
//
// The text tables: one function per result prints it the way the command
// prints it without --json (WriteDoctorTable, WriteFindingsTable,
// WriteBandwidthTable, WriteLatencyTable, WritePerftestTable,
// WritePerftestLatencyTable, WriteFleetTable, WriteMeshTable,
// WriteProofTable, WriteNCCLRunTable, WriteNCCLTestsTable, NCCLLiveRow,
// WriteDevicesTable),
// all tuned by one TableOptions. Colour is the caller's decision (a field):
// this package looks at no terminal and no environment.
//
// The page: Write renders erdmakit's results (the values behind every
// command's --json: the doctor, fleet doctor, bw run/mesh/lat, perftest,
// nccl run, the parsers' results) as one self-contained HTML page: the
// verdict first, then per host the findings, failing first, with their
// evidence and remediation, then the charts of package plot as inline SVG.
//
// The page fetches nothing (no font, script or style from the network; a
// Content-Security-Policy forbids it), so it works offline and can be
// attached to a ticket. Its few lines of script only sort and filter the
// tables; without script the page reads the same.
//
// An Input is made from a command's JSON (FromJSON, ReadFile: the kind is
// recognised by the keys docs/*.md documents for it) or from the Go value
// itself (FromValue). A JSON with keys this version does not know, as a
// newer erdmakit may write, is rendered as far as it is known and the page
// says so.
package report
