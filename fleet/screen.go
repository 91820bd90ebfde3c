package fleet

import (
	"math/rand/v2"
)

// Mesh schedules (MeshReport.Schedule).
const (
	ScheduleScreen = "screen" // ring + k random perfect matchings (ScreenSchedule)
	ScheduleFull   = "full"   // every pair once (Schedule), --full-mesh
)

// DefaultScreenMatchings is the number of random perfect matchings of the
// screen besides the ring: each host meets k+2 partners.
const DefaultScreenMatchings = 4

// ScreenSchedule returns the rounds of the mesh's screen over n hosts, in a
// number of rounds that does not grow with n: a ring (host i with i+1; 2
// rounds for even n, 3 for odd) and k random perfect matchings drawn from
// seed (one round each, one host idle when n is odd), avoiding pairs
// already drawn where it can. Each host meets k+2 different partners (k+1
// for one host of an odd ring), so a bad host shows in all its tests and a
// bad link in one; the judge's second pass then tells them apart. A slow
// link is seen only when the screen tests it (the ring's links always;
// others with probability about k/(n-1)): Schedule tests every pair.
func ScreenSchedule(n, k int, seed int64) [][]Pair {
	if n < 2 {
		return nil
	}
	if k < 0 {
		k = 0
	}
	used := map[[2]int]bool{}
	add := func(round []Pair, p Pair) []Pair {
		used[key2(p.Server, p.Client)] = true
		return append(round, p)
	}
	var rounds [][]Pair
	// The ring: edge i joins i and i+1 (mod n), host i serving; even edges,
	// then odd ones, then (odd n) the edge that wraps.
	if n == 2 {
		rounds = append(rounds, add(nil, Pair{Server: 0, Client: 1}))
	} else {
		var even, odd, wrap []Pair
		for i := 0; i < n; i++ {
			p := Pair{Server: i, Client: (i + 1) % n}
			switch {
			case n%2 == 1 && i == n-1:
				wrap = add(wrap, p)
			case i%2 == 0:
				even = add(even, p)
			default:
				odd = add(odd, p)
			}
		}
		rounds = append(rounds, even, odd)
		if len(wrap) > 0 {
			rounds = append(rounds, wrap)
		}
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x65726d61))
	for m := 0; m < k; m++ {
		var best []Pair
		fresh := -1
		for try := 0; try < 32 && fresh != 0; try++ {
			perm := rng.Perm(n)
			var round []Pair
			repeats := 0
			for i := 0; i+1 < n; i += 2 {
				p := Pair{Server: perm[i], Client: perm[i+1]}
				if used[key2(p.Server, p.Client)] {
					repeats++
				}
				round = append(round, p)
			}
			if fresh < 0 || repeats < fresh {
				best, fresh = round, repeats
			}
		}
		for _, p := range best {
			used[key2(p.Server, p.Client)] = true
		}
		rounds = append(rounds, best)
	}
	return rounds
}

func key2(a, b int) [2]int { return [2]int{min(a, b), max(a, b)} }

// meshSchedule is the schedule RunMesh runs: the full mesh when asked or
// when it is no longer than the screen, else the screen.
func meshSchedule(n int, opt MeshOptions) (string, [][]Pair) {
	k := opt.ScreenMatchings
	if k <= 0 {
		k = DefaultScreenMatchings
	}
	if opt.FullMesh || n-1 <= k+3 {
		return ScheduleFull, Schedule(n)
	}
	return ScheduleScreen, ScreenSchedule(n, k, opt.Seed)
}
