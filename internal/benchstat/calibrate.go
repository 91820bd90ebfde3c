package benchstat

import (
	"hash/crc32"
	"time"
)

// calibBuf is the calibration's working set: larger than a CPU's L2, as
// soft RDMA's copies and checksums are, small enough to stay in L3.
const calibBuf = 4 << 20

// Calibrate measures how fast this machine runs a fixed CPU and memory
// workload (a copy and a CRC-32 of a 4 MiB buffer, over and over) for about
// d, in MB/s. The lab's qemu guest runs on a shared host whose speed under
// software emulation swings by a third for tens of seconds at a time
// ("slow mode"): its user-space work, copies and Soft-RoCE's throughput
// all drop together. A calibration between two runs tells a steady run from
// a disturbed one without looking at the run's own figure.
func Calibrate(d time.Duration) float64 {
	src, dst := make([]byte, calibBuf), make([]byte, calibBuf)
	for i := range src {
		src[i] = byte(i * 7)
	}
	var (
		sum   uint32
		bytes int
		start = time.Now()
	)
	for time.Since(start) < d {
		copy(dst, src)
		sum = crc32.Update(sum, crc32.IEEETable, dst)
		src[sum%calibBuf] ^= byte(sum) // the next pass depends on this one
		bytes += calibBuf
	}
	return float64(bytes) / time.Since(start).Seconds() / 1e6
}

// Steady reports whether a run was steady: the calibrations before and
// after it (either may be 0: not taken) both reach frac of ref, the
// calibration of the machine's usual speed (the median so far).
func Steady(before, after, ref, frac float64) bool {
	return (before == 0 || before >= frac*ref) && (after == 0 || after >= frac*ref)
}
