package fleet

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// DefaultPort is the rendezvous TCP port. It stays clear of perftest's 18515,
// of erdmakit bw's default, and of 30608-30623, which the eRDMA driver holds in
// compat mode in every network namespace.
const DefaultPort = 18530

// Rank is this process's place in the job.
type Rank struct {
	Rank int `json:"rank"`
	Size int `json:"size"`
	// Launcher names where the numbers came from: "openmpi", "pmi", "slurm",
	// "flag".
	Launcher string `json:"launcher"`
}

// ErrNoLauncher means no launcher variables were found in the environment.
var ErrNoLauncher = errors.New("no launcher environment: run under mpirun or srun, or pass --rank and --ranks")

// launcherVars lists, in order of preference, the variables each launcher
// sets for the rank and the job size.
var launcherVars = [...]struct{ name, rank, size string }{
	{"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
	{"pmi", "PMI_RANK", "PMI_SIZE"},
	{"slurm", "SLURM_PROCID", "SLURM_NTASKS"},
	{"pmix", "PMIX_RANK", "PMIX_SIZE"},
}

// DiscoverRank reads the rank and size from the launcher's environment
// (getenv is os.Getenv in production).
func DiscoverRank(getenv func(string) string) (Rank, error) {
	for _, l := range launcherVars {
		rs, ss := getenv(l.rank), getenv(l.size)
		if rs == "" && ss == "" {
			continue
		}
		r, err := strconv.Atoi(strings.TrimSpace(rs))
		if err != nil {
			return Rank{}, fmt.Errorf("fleet: %s=%q is not a rank", l.rank, rs)
		}
		s, err := strconv.Atoi(strings.TrimSpace(ss))
		if err != nil {
			return Rank{}, fmt.Errorf("fleet: %s=%q is not a job size", l.size, ss)
		}
		return NewRank(r, s, l.name)
	}
	return Rank{}, ErrNoLauncher
}

// ResolveRank decides this process's rank from the --rank and --ranks flags
// (rank < 0 and size 0 when not given) and the launcher's environment: a
// flag given wins, what it leaves out comes from the launcher, so
// `srun erdmakit ... --ranks 8` still takes each rank from SLURM_PROCID.
func ResolveRank(rank, size int, getenv func(string) string) (Rank, error) {
	if rank >= 0 && size > 0 {
		return NewRank(rank, size, "flag")
	}
	env, err := DiscoverRank(getenv)
	if err != nil {
		if rank < 0 && size <= 0 {
			return Rank{}, err
		}
		return Rank{}, fmt.Errorf("fleet: pass both --rank and --ranks outside mpirun/srun: %w", err)
	}
	if rank < 0 && size <= 0 {
		return env, nil
	}
	if rank < 0 {
		rank = env.Rank
	}
	if size <= 0 {
		size = env.Size
	}
	return NewRank(rank, size, env.Launcher+"+flag")
}

// NewRank validates a rank and size.
func NewRank(rank, size int, launcher string) (Rank, error) {
	if size < 1 {
		return Rank{}, fmt.Errorf("fleet: job size %d: must be at least 1", size)
	}
	if rank < 0 || rank >= size {
		return Rank{}, fmt.Errorf("fleet: rank %d outside a job of size %d", rank, size)
	}
	return Rank{Rank: rank, Size: size, Launcher: launcher}, nil
}

// RendezvousAddr decides where rank 0 listens, host:port. In order: the flag
// value, ERDMAKIT_RENDEZVOUS, MASTER_ADDR[:MASTER_PORT] (the torch/NCCL
// convention many job scripts already export), the first host of Slurm's
// SLURM_JOB_NODELIST (srun's block distribution puts rank 0 there). Open MPI
// exports no host list: pass --rendezvous (the first host of -H).
func RendezvousAddr(flag string, getenv func(string) string) (string, error) {
	withPort := func(h string) string {
		if _, _, err := net.SplitHostPort(h); err == nil {
			return h
		}
		return net.JoinHostPort(h, strconv.Itoa(DefaultPort))
	}
	if flag != "" {
		return withPort(flag), nil
	}
	if v := getenv("ERDMAKIT_RENDEZVOUS"); v != "" {
		return withPort(v), nil
	}
	if v := getenv("MASTER_ADDR"); v != "" {
		if p := getenv("MASTER_PORT"); p != "" {
			return net.JoinHostPort(v, p), nil
		}
		return withPort(v), nil
	}
	if v := getenv("SLURM_JOB_NODELIST"); v != "" {
		h, err := FirstHost(v)
		if err != nil {
			return "", err
		}
		return withPort(h), nil
	}
	return "", errors.New("fleet: no rendezvous address: pass --rendezvous HOST[:PORT] (the host of rank 0, e.g. the first host given to mpirun -H)")
}

// FirstHost returns the first host of a Slurm hostlist expression:
// "node[03-05,9],gpu1" -> "node03".
func FirstHost(list string) (string, error) {
	list = strings.TrimSpace(list)
	if list == "" {
		return "", errors.New("fleet: empty Slurm node list")
	}
	// The first element ends at a comma outside brackets.
	depth, end := 0, len(list)
	for i, c := range list {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 && end == len(list) {
				end = i
			}
		}
	}
	first := list[:end]
	open := strings.IndexByte(first, '[')
	if open < 0 {
		return first, nil
	}
	closing := strings.IndexByte(first, ']')
	if closing < open {
		return "", fmt.Errorf("fleet: bad Slurm node list %q", list)
	}
	r := first[open+1 : closing]
	if i := strings.IndexByte(r, ','); i >= 0 {
		r = r[:i]
	}
	if i := strings.IndexByte(r, '-'); i >= 0 {
		r = r[:i]
	}
	if r == "" {
		return "", fmt.Errorf("fleet: bad Slurm node list %q", list)
	}
	return first[:open] + r + first[closing+1:], nil
}
