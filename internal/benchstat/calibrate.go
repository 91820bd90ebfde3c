package benchstat

import (
	"fmt"
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

// Calibrator calibrates the machine between a benchmark's runs and tells
// the steady runs: those whose calibrations on both sides reach Frac of the
// reference, the upper quartile of every calibration so far. (The lab's slow
// mode can take more than half of an hour, so the median may be a slow
// speed; the upper quartile is the fast one whenever the fast mode holds a
// quarter of the time.) A benchmark judges its rounds again at the end,
// against the final reference: the first rounds were judged against a few
// calibrations only. The zero Calibrator is off: Take returns 0 and every
// run is steady.
type Calibrator struct {
	Frac float64       // 0: off
	D    time.Duration // each calibration's length
	all  []float64
}

// Start takes a few calibrations, so that the reference has a footing
// before the first run.
func (c *Calibrator) Start() {
	for range 8 {
		c.Take()
	}
}

// Take is one calibration in MB/s (0 when off).
func (c *Calibrator) Take() float64 {
	if c.Frac <= 0 {
		return 0
	}
	v := Calibrate(c.D)
	c.all = append(c.all, v)
	return v
}

// Ref is the reference speed: the upper quartile of the calibrations so
// far.
func (c *Calibrator) Ref() float64 { return Quantile(c.all, 0.75) }

// All is every calibration taken, in order.
func (c *Calibrator) All() []float64 { return c.all }

// Steady reports whether a run between these two calibrations was steady.
func (c *Calibrator) Steady(before, after float64) bool {
	return c.Frac <= 0 || Steady(before, after, c.Ref(), c.Frac)
}

// Summary is one line on what was kept: the fraction, the reference and
// the calibrations' quartiles ("" when off).
func (c *Calibrator) Summary() string {
	if c.Frac <= 0 {
		return ""
	}
	return fmt.Sprintf("every run's calibration at least %.2f of the reference (the upper quartile), %.0f MB/s; %d calibrations, p25-p75 %.0f-%.0f MB/s",
		c.Frac, c.Ref(), len(c.all), Quantile(c.all, 0.25), Quantile(c.all, 0.75))
}

// ByRound groups a benchmark's runs by their round number, the rounds in
// the order they first appear.
func ByRound[S any](runs []S, round func(S) int) [][]S {
	var (
		groups [][]S
		index  = map[int]int{}
	)
	for _, r := range runs {
		i, ok := index[round(r)]
		if !ok {
			i = len(groups)
			index[round(r)] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], r)
	}
	return groups
}

// JudgeRounds groups runs by round (ByRound) and judges each one
// (SteadyRound): the steady rounds, and the numbers of the others.
func JudgeRounds[S any](runs []S, round func(S) int, calibrations func(S) (before, after float64), steady func(before, after float64) bool) (kept [][]S, disturbed []int) {
	for _, r := range ByRound(runs, round) {
		if SteadyRound(r, calibrations, steady) {
			kept = append(kept, r)
		} else {
			disturbed = append(disturbed, round(r[0]))
		}
	}
	return kept, disturbed
}

// SteadyRound reports whether every run of a round was steady: steady
// (Calibrator.Steady) of the calibrations before and after each.
func SteadyRound[S any](runs []S, calibrations func(S) (before, after float64), steady func(before, after float64) bool) bool {
	for _, r := range runs {
		if !steady(calibrations(r)) {
			return false
		}
	}
	return true
}

// Unscored says why a row of a side-by-side run has no ratio, for the
// message beside a benchmark command's failing exit: every round left out as
// disturbed (the lab's slow mode: the run is not a result, not a failure of
// the tools), or a tool with no figure in any kept round.
func Unscored(roundsRun, disturbed int) string {
	if roundsRun > 0 && disturbed >= roundsRun {
		return fmt.Sprintf("all %d rounds left out as disturbed (calibrations below the reference): the lab was in its slow mode; run it again", roundsRun)
	}
	return fmt.Sprintf("no tool figure in any of the %d kept rounds: see the tools' errors above", roundsRun-disturbed)
}
