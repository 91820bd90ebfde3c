// Package netnstest is the fixture of the tests that run in a private
// network namespace (Linux only): the re-executed child (Rerun), and inside
// the namespace the ECS metadata fake at its fixed address
// (ServeMetadata), the primary ENI (Primary) and ERI netdevs (Veth), as
// veth pairs. The tests of setup and eri share it rather than each writing
// it again. Tests only: nothing outside _test.go files imports it.
package netnstest
